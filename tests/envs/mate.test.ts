// MATE: the renderer must carry every visible attribute (decoded back from pixels alone), and every generated answer
// must follow from the episode's own content — the question text, the JSON shown to the model and the rendered
// pixels — re-derived here without the generator's internal state (meta.scene is used only by the renderer).
import { describe, expect, it } from 'vitest';
import { mateEnv } from '../../envs/mate/index.ts';
import { mateOptions } from '../../envs/mate/episodes.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { BACKGROUND, MATE_PALETTE, worldToImage } from '../../envs/mate/render.ts';
import { sampleScene } from '../../envs/mate/scene.ts';
import { renderScene } from '../../envs/mate/render.ts';
import { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import type { Episode } from '../../core/episode.ts';
import type { RawImage } from '../../core/image.ts';

interface Blob {
  x: number; // bbox centre, pixels
  y: number;
  color: string;
  shape: string;
  size: 'small' | 'large';
  material: 'metal' | 'rubber';
}

/** Decode objects from pixels: connected non-background blobs, their colour vote, silhouette, height and highlight. */
function decode(image: RawImage): Blob[] {
  const { width: w, height: h, data } = image;
  const isBg = (i: number) =>
    data[i * 3] === BACKGROUND[0] && data[i * 3 + 1] === BACKGROUND[1] && data[i * 3 + 2] === BACKGROUND[2];
  const seen = new Uint8Array(w * h);
  const blobs: Blob[] = [];
  const palette = Object.entries(MATE_PALETTE);
  for (let start = 0; start < w * h; start++) {
    if (seen[start] || isBg(start)) continue;
    const stack = [start];
    seen[start] = 1;
    let minX = w,
      maxX = -1,
      minY = h,
      maxY = -1,
      area = 0,
      white = 0;
    const votes = new Map<string, number>();
    while (stack.length > 0) {
      const p = stack.pop()!;
      const px = p % w,
        py = Math.floor(p / w);
      area++;
      minX = Math.min(minX, px);
      maxX = Math.max(maxX, px);
      minY = Math.min(minY, py);
      maxY = Math.max(maxY, py);
      const [r, g, b] = [data[p * 3], data[p * 3 + 1], data[p * 3 + 2]];
      if (r === 255 && g === 255 && b === 255) white++;
      else {
        let best = '',
          bestD = Infinity;
        for (const [name, c] of palette) {
          const d = (r - c[0]) ** 2 + (g - c[1]) ** 2 + (b - c[2]) ** 2;
          if (d < bestD) {
            bestD = d;
            best = name;
          }
        }
        votes.set(best, (votes.get(best) ?? 0) + 1);
      }
      for (const q of [px > 0 ? p - 1 : -1, px < w - 1 ? p + 1 : -1, py > 0 ? p - w : -1, py < h - 1 ? p + w : -1]) {
        if (q >= 0 && !seen[q] && !isBg(q)) {
          seen[q] = 1;
          stack.push(q);
        }
      }
    }
    const bw = maxX - minX + 1,
      bh = maxY - minY + 1;
    const fill = area / (bw * bh);
    const shape = bw / bh < 0.85 ? 'cylinder' : fill > 0.9 ? 'cube' : fill > 0.65 ? 'sphere' : 'cone';
    const color = [...votes.entries()].sort((a, b) => b[1] - a[1])[0][0];
    blobs.push({
      x: (minX + maxX + 1) / 2,
      y: (minY + maxY + 1) / 2,
      color,
      shape,
      size: bh > 0.14 * w ? 'large' : 'small',
      material: white > 0 ? 'metal' : 'rubber',
    });
  }
  return blobs;
}

function nearestBlob(blobs: Blob[], x: number, y: number): Blob {
  return blobs.reduce((best, b) =>
    (b.x - x) ** 2 + (b.y - y) ** 2 < (best.x - x) ** 2 + (best.y - y) ** 2 ? b : best,
  );
}

describe('mate renderer', () => {
  it('shows every object with its colour, shape, size and material, none hiding another (512 px)', () => {
    const rng = new Rng(11, 'mate-render');
    for (let i = 0; i < 32; i++) {
      const scene = sampleScene(rng, 3 + (i % 8));
      const blobs = decode(renderScene(scene, 512));
      expect(blobs).toHaveLength(scene.objects.length);
      for (const o of scene.objects) {
        const [x, y] = worldToImage(o.coords[0], o.coords[1], 512);
        const b = nearestBlob(blobs, x, y);
        expect(Math.hypot(b.x - x, b.y - y)).toBeLessThan(3);
        expect({ color: b.color, shape: b.shape, size: b.size, material: b.material }).toEqual({
          color: o.color,
          shape: o.shape,
          size: o.size < 0.5 ? 'small' : 'large',
          material: o.material,
        });
      }
    }
  });

  it('keeps objects apart and their colours and sizes exact at the built-in model size (64 px)', () => {
    const rng = new Rng(12, 'mate-render');
    let objects = 0;
    let shapesRight = 0;
    let materialsRight = 0;
    for (let i = 0; i < 80; i++) {
      const scene = sampleScene(rng, 3 + (i % 8));
      const blobs = decode(renderScene(scene, 64));
      expect(blobs).toHaveLength(scene.objects.length);
      for (const o of scene.objects) {
        const [x, y] = worldToImage(o.coords[0], o.coords[1], 64);
        const b = nearestBlob(blobs, x, y);
        expect(b.color).toBe(o.color);
        expect(b.size).toBe(o.size < 0.5 ? 'small' : 'large');
        objects++;
        if (b.shape === o.shape) shapesRight++;
        if (b.material === o.material) materialsRight++;
      }
    }
    // Small icons are 6 px wide at 64 px: silhouettes and the 1-px highlight are still readable by this crude decoder.
    expect(shapesRight / objects).toBeGreaterThan(0.97);
    expect(materialsRight / objects).toBe(1);
  });
});

interface JsonObject {
  name: string;
  shape?: string;
  color?: string;
  material: string;
  size: number;
  rotation: number;
  '3d_coords': number[];
}

const TEXT_KEY: Record<string, keyof JsonObject> = {
  name: 'name',
  rotation: 'rotation',
  size: 'size',
  '3D coordinates': '3d_coords',
};

function valueText(v: unknown): string {
  return Array.isArray(v) ? `[${v.map(String).join(', ')}]` : String(v);
}

/** Solving renders at half the chat size: the same renderer, a quarter of the pixels to decode. */
const SIZE = 256;

/** Answer a question from the question text, the JSON shown and the image's pixels. */
function solve(episode: Episode, isShot = false): string {
  const q = /^What (?:is|are) the (name|rotation|size|3D coordinates|color|shape) of the (.+)\?$/.exec(
    episode.question!,
  )!;
  expect(q).not.toBeNull();
  const [, targetNoun, rest] = q;
  let pointer: { attr: string; value: string };
  let m: RegExpExecArray | null;
  if ((m = /^object named (\S+)$/.exec(rest))) pointer = { attr: 'name', value: m[1] };
  else if ((m = /^object at the coordinates (\[.+\])$/.exec(rest))) pointer = { attr: '3D coordinates', value: m[1] };
  else if ((m = /^object with a (rotation|size) of (\S+)$/.exec(rest))) pointer = { attr: m[1], value: m[2] };
  else if ((m = /^(\w+) object$/.exec(rest))) pointer = { attr: 'color', value: m[1] };
  else pointer = { attr: 'shape', value: rest };
  const json: JsonObject[] | null =
    episode.initialState === '' ? null : (JSON.parse(episode.initialState) as { objects: JsonObject[] }).objects;
  const image = mateEnv.renderAction(episode, 0, SIZE);
  const blank = image.data.every((v) => v === 255);
  const blobs = blank ? [] : decode(image);
  expect(blank).toBe(episode.meta.task === 'txt2txt');
  const visual = pointer.attr === 'color' || pointer.attr === 'shape';
  const targetVisual = targetNoun === 'color' || targetNoun === 'shape';
  // The attributes asked through the image are not in the JSON (a shot may point with another attribute).
  if (json && visual && !isShot) expect(json.some((o) => pointer.attr in o)).toBe(false); // the image-side attribute is not in the JSON
  if (json && targetVisual) expect(json.some((o) => targetNoun in o)).toBe(false);

  // Find the pointed object in its modality; it must be the only match.
  let blob: Blob | undefined;
  let row: JsonObject | undefined;
  if (visual) {
    const matches = blobs.filter((b) => b[pointer.attr as 'color' | 'shape'] === pointer.value);
    expect(matches).toHaveLength(1);
    blob = matches[0];
  } else {
    const matches = json!.filter((o) => valueText(o[TEXT_KEY[pointer.attr]]) === pointer.value);
    expect(matches).toHaveLength(1);
    row = matches[0];
  }
  // Link across modalities through the position, and check that the shared attributes agree.
  if (!blob && targetVisual) {
    const [x, y] = worldToImage(row!['3d_coords'][0], row!['3d_coords'][1], SIZE);
    blob = nearestBlob(blobs, x, y);
  }
  if (!row && !targetVisual) {
    row = json!.reduce((best, o) => {
      const d = (o: JsonObject) =>
        Math.hypot(
          ...worldToImage(o['3d_coords'][0], o['3d_coords'][1], SIZE).map((v, i) => v - [blob!.x, blob!.y][i]),
        );
      return d(o) < d(best) ? o : best;
    });
  }
  if (blob && row) {
    expect(blob.material).toBe(row.material);
    expect(blob.size).toBe(row.size < 0.5 ? 'small' : 'large');
    if (row.shape) expect(blob.shape).toBe(row.shape);
    if (row.color) expect(blob.color).toBe(row.color);
  }
  return targetVisual ? blob![targetNoun as 'color' | 'shape'] : valueText(row![TEXT_KEY[targetNoun]]);
}

describe('mate episodes', () => {
  const episodes = generateEpisodes(mateEnv, {
    n: 240,
    actions: 1,
    split: 'test',
    seed: 5,
    modality: 'image',
    extra: { 'mate-task': 'all' },
  });

  it('has answers that follow from the question, the JSON and the pixels', () => {
    for (const e of episodes) expect(solve(e), `${e.id}: ${e.question}`).toBe(e.target);
  });

  it('solves its in-scene shots the same way', () => {
    let checked = 0;
    for (const e of episodes.slice(0, 80)) {
      for (const shot of e.meta.shots as { question: string; answer: string }[]) {
        expect(solve({ ...e, question: shot.question }, true)).toBe(shot.answer);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('balances tasks, object counts and pointer/target pairs', () => {
    const many = generateEpisodes(mateEnv, {
      n: 1500,
      actions: 1,
      split: 'train',
      seed: 6,
      modality: 'image',
      extra: { 'mate-task': 'all' },
    });
    const count = (key: (e: Episode) => string) => {
      const m = new Map<string, number>();
      for (const e of many) m.set(key(e), (m.get(key(e)) ?? 0) + 1);
      return [...m.values()];
    };
    const tasks = count((e) => String(e.meta.task));
    expect(tasks).toHaveLength(4);
    // Every (task, count, pair) is equally frequent, so tasks follow their number of pairs: 8, 8, 2 and 12 of 30.
    expect(Math.min(...count((e) => String(e.meta.objectCount)))).toBeGreaterThan(1500 / 8 - 40);
    const pairs = count((e) => `${e.meta.task} ${e.meta.pointerAttribute}>${e.meta.targetAttribute}`);
    expect(pairs).toHaveLength(30);
    expect(Math.max(...pairs) / Math.min(...pairs)).toBeLessThan(1.6);
  });

  it('gives shots from the same scene about other objects, and honours --mate-shots and --mate-objects', () => {
    const few = generateEpisodes(mateEnv, {
      n: 60,
      actions: 1,
      split: 'train',
      seed: 7,
      modality: 'image',
      extra: { 'mate-shots': 1, 'mate-objects': '4-5' },
    });
    // A shot needs another object with a unique pointer value; in a small scene there may be none.
    expect(few.filter((e) => (e.meta.shots as unknown[]).length === 1).length).toBeGreaterThan(55);
    for (const e of few) {
      expect((e.meta.shots as unknown[]).length).toBeLessThanOrEqual(1);
      expect([4, 5]).toContain(e.meta.objectCount);
      expect(['img2txt', 'txt2img']).toContain(e.meta.task);
    }
    const none = generateEpisodes(mateEnv, {
      n: 10,
      actions: 1,
      split: 'train',
      seed: 7,
      modality: 'text',
      extra: { 'mate-shots': 0 },
    });
    for (const e of none)
      expect(e.actions).toEqual([
        { text: e.meta.task === 'txt2txt' ? 'blank image' : 'scene image', modality: 'image' },
      ]);
    for (const e of none) expect(e.meta.shots).toEqual([]);
  });

  it('is deterministic from the seed, and train and test never share a scene', () => {
    const again = generateEpisodes(mateEnv, {
      n: 240,
      actions: 1,
      split: 'test',
      seed: 5,
      modality: 'image',
      extra: { 'mate-task': 'all' },
    });
    expect(again).toEqual(episodes);
    const train = generateEpisodes(mateEnv, {
      n: 600,
      actions: 1,
      split: 'train',
      seed: 5,
      modality: 'image',
      extra: { 'mate-task': 'all' },
    });
    const scenes = new Set(episodes.map((e) => JSON.stringify(e.meta.scene)));
    for (const e of train) expect(scenes.has(JSON.stringify(e.meta.scene))).toBe(false);
  });

  it('rejects bad options with one clear line', () => {
    expect(() => mateOptions({ 'mate-task': 'img2vid' })).toThrow(UserError);
    expect(() => mateOptions({ 'mate-objects': '2-12' })).toThrow(/--mate-objects/);
    expect(() => mateOptions({ 'mate-shots': 3 })).toThrow(/--mate-shots/);
    expect(mateOptions({ mateTask: 'unimodal', mateObjects: 7 })).toEqual({
      tasks: ['img2img', 'txt2txt'],
      objects: [7, 7],
      shots: 2,
    });
  });

  it('puts the scene image (or the blank image) before the question in every prompt style', () => {
    for (const e of episodes.slice(0, 20)) {
      for (const style of mateEnv.promptStyles) {
        const [message] = mateEnv.prompt(e, { style, shots: [] });
        expect(message.parts[0]).toEqual({ type: 'image', ref: { episode: e, index: 0 } });
        const text = (message.parts[1] as { text: string }).text;
        expect(text.endsWith(`Now answer the following question: ${e.question}`)).toBe(true);
        if (e.meta.task !== 'img2img') expect(text).toContain(e.initialState);
        if (style === 'zero-shot') expect(text).not.toContain('For example');
      }
    }
  });
});
