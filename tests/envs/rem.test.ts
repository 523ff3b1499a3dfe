// REM: every answer must follow from what the frames show. Here visibility is re-derived from pixels alone: each
// frame is rendered through env.renderAction as it is, and again with one object taken out of the episode's world;
// the pixels that change are that object's visible part. Camera poses are re-simulated from the action texts by this
// test's own parser. The generator's visibility tables are never consulted.
import { describe, expect, it } from 'vitest';
import { remEnv } from '../../envs/rem/index.ts';
import { remOptions } from '../../envs/rem/episodes.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { REFERENCE_SIZE, VISIBLE_PIXELS, REM_PALETTE } from '../../envs/rem/render.ts';
import { UserError } from '../../core/errors.ts';
import type { Episode } from '../../core/episode.ts';
import type { RemWorld } from '../../envs/rem/world.ts';

const SIZE = REFERENCE_SIZE;

interface Seen {
  /** pixels[f][j]: pixels of object j visible in frame f; cx the mean x of those pixels. */
  pixels: number[][];
  cx: number[][];
  /** edge[f][j]: object j shows in the first or last pixel column of frame f (cut by the frame edge). */
  edge: boolean[][];
}

const memo = new Map<string, Seen>();

/** Visible pixels of every object in every frame, from renders with and without the object (memoised per trajectory). */
function visibilityFromPixels(episode: Episode, size = SIZE): Seen {
  const key = JSON.stringify([episode.meta.world, episode.actions, size]);
  const known = memo.get(key);
  if (known) return known;
  const world = episode.meta.world as RemWorld;
  const pixels: number[][] = [];
  const cx: number[][] = [];
  const edge: boolean[][] = [];
  episode.actions.forEach((_, f) => {
    const full = remEnv.renderAction(episode, f, size).data;
    pixels.push([]);
    cx.push([]);
    edge.push([]);
    world.objects.forEach((_, j) => {
      const without: Episode = {
        ...episode,
        meta: { ...episode.meta, world: { ...world, objects: world.objects.filter((__, k) => k !== j) } },
      };
      const other = remEnv.renderAction(without, f, size).data;
      let n = 0;
      let sx = 0;
      let atEdge = false;
      for (let p = 0; p < size * size; p++) {
        if (
          full[p * 3] !== other[p * 3] ||
          full[p * 3 + 1] !== other[p * 3 + 1] ||
          full[p * 3 + 2] !== other[p * 3 + 2]
        ) {
          n++;
          sx += p % size;
          if (p % size === 0 || p % size === size - 1) atEdge = true;
        }
      }
      pixels[f].push(n);
      cx[f].push(n > 0 ? sx / n : NaN);
      edge[f].push(atEdge);
    });
  });
  memo.set(key, { pixels, cx, edge });
  return { pixels, cx, edge };
}

/** Objects matching an entity phrase: "blue objects", "cones", "red spheres", "the red sphere". */
function matcher(phrase: string): (o: { color: string; shape: string }) => boolean {
  const words = phrase.replace(/^the /, '').split(' ');
  const singular = (w: string) => w.replace(/s$/, '');
  if (words.length === 2 && (words[1] === 'objects' || words[1] === 'object')) return (o) => o.color === words[0];
  if (words.length === 1) return (o) => o.shape === singular(words[0]);
  return (o) => o.color === words[0] && o.shape === singular(words[1]);
}

// Taking an object out changes exactly its visible pixels unless what lies behind has the very same colour (a twin
// face with the same shading); so near the threshold a pixel-derived count may fall short by a few pixels.
const UNSURE_LOW = 0.9 * VISIBLE_PIXELS;
const UNSURE_HIGH = VISIBLE_PIXELS;

/** The answer from pixels, or null when an object that matters sits too close to the visibility threshold. */
function solve(episode: Episode): string | null {
  const world = episode.meta.world as RemWorld;
  const v = visibilityFromPixels(episode);
  const frames = episode.actions.length;
  const unsure = (j: number) => v.pixels.some((row) => row[j] >= UNSURE_LOW && row[j] < UNSURE_HIGH);
  const visible = (f: number, j: number) => v.pixels[f][j] >= VISIBLE_PIXELS;
  const seen = (j: number) => v.pixels.some((row) => row[j] >= VISIBLE_PIXELS);
  const involved = (m: (o: { color: string; shape: string }) => boolean) =>
    world.objects.map((o, j) => (m(o) ? j : -1)).filter((j) => j >= 0);
  const q = episode.question!;
  let m: RegExpExecArray | null;
  if ((m = /^How many (.+) did you see\?$/.exec(q))) {
    const ids = involved(matcher(m[1]));
    if (ids.some(unsure)) return null;
    return String(ids.filter(seen).length);
  }
  if ((m = /^Did you see more (.+) or (.+), or an equal number\?$/.exec(q))) {
    const a = involved(matcher(m[1]));
    const b = involved(matcher(m[2]));
    if ([...a, ...b].some(unsure)) return null;
    const ca = a.filter(seen).length;
    const cb = b.filter(seen).length;
    return ca > cb ? m[1] : cb > ca ? m[2] : 'equal';
  }
  if ((m = /^Is the (.+) to the left or right of the (.+)\?$/.exec(q))) {
    const a = involved(matcher(m[1]));
    const b = involved(matcher(m[2]));
    if ([...a, ...b].some(unsure)) return null;
    const sa = a.filter(seen);
    const sb = b.filter(seen);
    expect(sa).toHaveLength(1); // each seen as exactly one instance
    expect(sb).toHaveLength(1);
    const sides = new Set<string>();
    for (let f = 0; f < frames; f++) {
      if (visible(f, sa[0]) && visible(f, sb[0])) sides.add(v.cx[f][sa[0]] < v.cx[f][sb[0]] ? 'left' : 'right');
    }
    expect(sides.size).toBe(1); // the relation holds in every frame showing both
    return [...sides][0];
  }
  if ((m = /^Did we see the (.+) before, after, or at the same time as the (.+)\?$/.exec(q))) {
    const a = involved(matcher(m[1]));
    const b = involved(matcher(m[2]));
    if ([...a, ...b].some(unsure)) return null;
    const first = (ids: number[]) => {
      for (let f = 0; f < frames; f++) if (ids.some((j) => visible(f, j))) return f;
      return Infinity;
    };
    const fa = first(a);
    const fb = first(b);
    expect(Number.isFinite(fa) && Number.isFinite(fb)).toBe(true);
    return fa < fb ? 'before' : fa > fb ? 'after' : 'same time';
  }
  throw new Error(`unrecognised question ${q}`);
}

/** Poses re-simulated from the action texts with this test's own reading of them. */
function poses(episode: Episode): { x: number; y: number; heading: number }[] {
  const world = episode.meta.world as RemWorld;
  let { x, y, heading } = world.start;
  return episode.actions.map((a, i) => {
    if (i === 0) expect(a.text).toBe('start');
    else if (a.text === 'move forward 1m') {
      x += Math.cos((heading * Math.PI) / 180);
      y += Math.sin((heading * Math.PI) / 180);
    } else if (a.text === 'rotate left 15°') heading += 15;
    else if (a.text === 'rotate right 15°') heading -= 15;
    else throw new Error(`unexpected action ${a.text}`);
    return { x, y, heading };
  });
}

describe('rem episodes', () => {
  const baseline = generateEpisodes(remEnv, {
    n: 40,
    actions: 6,
    split: 'test',
    seed: 3,
    modality: 'image',
    extra: { 'rem-objects': '8-16' },
  });

  it('has answers that follow from what the frames show (baseline, all four categories)', () => {
    let checked = 0;
    const categories = new Set<string>();
    for (const e of baseline) {
      const answer = solve(e);
      if (answer === null) continue;
      expect(answer, `${e.id}: ${e.question}`).toBe(e.target);
      checked++;
      categories.add(String(e.meta.category));
    }
    expect(checked).toBeGreaterThan(0.8 * baseline.length);
    expect([...categories].sort()).toEqual(['comparison', 'counting', 'left-right', 'temporal']);
  });

  it('draws objects in their colour, shaded but not recoloured', () => {
    let checked = 0;
    const wrong: string[] = [];
    for (const e of baseline.slice(0, 12)) {
      const world = e.meta.world as RemWorld;
      const v = visibilityFromPixels(e);
      const f = e.actions.length - 1;
      const image = remEnv.renderAction(e, f, SIZE).data;
      world.objects.forEach((o, j) => {
        if (v.pixels[f][j] < VISIBLE_PIXELS) return;
        // Re-find the object's pixels and check each is its palette colour times one shade factor.
        const without: Episode = {
          ...e,
          meta: { ...e.meta, world: { ...world, objects: world.objects.filter((_, k) => k !== j) } },
        };
        const other = remEnv.renderAction(without, f, SIZE).data;
        const palette = REM_PALETTE[o.color];
        for (let p = 0; p < SIZE * SIZE; p++) {
          if (
            image[p * 3] === other[p * 3] &&
            image[p * 3 + 1] === other[p * 3 + 1] &&
            image[p * 3 + 2] === other[p * 3 + 2]
          )
            continue;
          const s = (image[p * 3] + image[p * 3 + 1] + image[p * 3 + 2]) / (palette[0] + palette[1] + palette[2]);
          const off = [0, 1, 2].some((c) => Math.abs(image[p * 3 + c] - palette[c] * s) >= 4);
          if (s <= 0.5 || off) wrong.push(`${o.color} pixel ${[image[p * 3], image[p * 3 + 1], image[p * 3 + 2]]}`);
          checked++;
        }
      });
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(checked).toBeGreaterThan(300);
  });

  it('moves the camera exactly as the action texts say', () => {
    for (const e of baseline.slice(0, 10)) {
      const world = e.meta.world as RemWorld;
      const ps = poses(e);
      // A frame rendered from the re-simulated pose, with the world shifted so that pose becomes the start, is the same image.
      const f = ps.length - 1;
      const shifted: Episode = {
        ...e,
        actions: [e.actions[0]],
        meta: { ...e.meta, world: { ...world, start: ps[f] } },
      };
      expect(remEnv.renderAction(shifted, 0, 64).data).toEqual(remEnv.renderAction(e, f, 64).data);
    }
  });

  it('shows partial views: objects leave the view and come back, and are cut at the frame edges', () => {
    const long = generateEpisodes(remEnv, {
      n: 24,
      actions: 16,
      split: 'train',
      seed: 4,
      modality: 'image',
      extra: { 'rem-objects': 8, 'rem-question': 'counting' },
    });
    let reentries = 0;
    let cut = 0;
    for (const e of long.filter((_, i) => i % 2 === 0)) {
      const world = e.meta.world as RemWorld;
      expect(world.objects.length).toBe(8);
      // At 64 px (the built-in model's view) any changed pixel counts as showing the object.
      const v = visibilityFromPixels(e, 64);
      world.objects.forEach((_, j) => {
        const seq = v.pixels.map((row) => (row[j] > 0 ? 1 : 0)).join('');
        if (/10+1/.test(seq)) reentries++;
      });
      cut += v.edge.flat().filter(Boolean).length;
    }
    expect(reentries).toBeGreaterThan(5);
    expect(cut).toBeGreaterThan(20);
  });

  it('full rotation: 24 frames turning in place, the 180° view mirrors the first, duplicated targets counted twice', () => {
    const full = generateEpisodes(remEnv, {
      n: 12,
      actions: 10,
      split: 'test',
      seed: 8,
      modality: 'image',
      extra: { 'rem-variant': 'full-rotation' },
    });
    const gts = new Set<string>();
    for (const e of full) {
      expect(e.actions).toHaveLength(24);
      const ps = poses(e);
      expect(new Set(ps.map((p) => `${p.x},${p.y}`)).size).toBe(1);
      expect(Math.abs(ps[12].heading - ps[0].heading)).toBe(180);
      const world = e.meta.world as RemWorld;
      expect(world.objects).toHaveLength(24);
      // Every object in front has a mirror image behind; 1-2 of them with the same colour and shape.
      const front = world.objects.slice(0, 8);
      const back = world.objects.slice(8, 16);
      front.forEach((o, i) => expect([back[i].x, back[i].y]).toEqual([-o.x, -o.y]));
      const same = front.filter((o, i) => o.color === back[i].color && o.shape === back[i].shape).length;
      expect(same).toBe(e.meta.duplicates);
      expect(e.meta.category).toBe('counting');
      gts.add(e.target);
    }
    expect([...gts].sort()).toEqual(['0', '1', '2']);
    for (const e of full.slice(0, 3)) {
      const answer = solve(e);
      if (answer !== null) expect(answer).toBe(e.target);
    }
  });

  it('single frame: one image, counting questions answered from it', () => {
    const single = generateEpisodes(remEnv, {
      n: 9,
      actions: 10,
      split: 'test',
      seed: 9,
      modality: 'image',
      extra: { 'rem-variant': 'single-frame', 'rem-objects': '24-30' },
    });
    let checked = 0;
    for (const e of single) {
      expect(e.actions).toHaveLength(1);
      expect(e.meta.category).toBe('counting');
      const answer = solve(e);
      if (answer === null) continue;
      expect(answer).toBe(e.target);
      checked++;
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('is deterministic, keeps each trajectory in one split, and honours its options', () => {
    const again = generateEpisodes(remEnv, {
      n: 40,
      actions: 6,
      split: 'test',
      seed: 3,
      modality: 'image',
      extra: { 'rem-objects': '8-16' },
    });
    expect(again).toEqual(baseline);
    const train = generateEpisodes(remEnv, {
      n: 80,
      actions: 6,
      split: 'train',
      seed: 3,
      modality: 'image',
      extra: { 'rem-objects': '8-16' },
    });
    const testWorlds = new Set(baseline.map((e) => JSON.stringify(e.meta.world)));
    for (const e of train) expect(testWorlds.has(JSON.stringify(e.meta.world))).toBe(false);
    for (const e of [...baseline, ...train]) {
      expect(e.actions).toHaveLength(6);
      expect(e.actions.every((a) => a.modality === 'image')).toBe(true);
      expect(e.meta.objects as number).toBeGreaterThanOrEqual(8);
      expect(e.meta.objects as number).toBeLessThanOrEqual(16);
    }
    // The initial state spells the moves, one letter each, for layouts that show the images without their captions.
    for (const e of baseline) {
      const letters = e.actions
        .slice(1)
        .map((a) => ({ 'move forward 1m': 'F', 'rotate left 15°': 'L', 'rotate right 15°': 'R' })[a.text])
        .join('');
      expect(e.initialState.endsWith(`: ${letters}`)).toBe(true);
    }
    // Frames are images whatever --modality says.
    const asText = generateEpisodes(remEnv, {
      n: 4,
      actions: 3,
      split: 'train',
      seed: 3,
      modality: 'text',
      extra: { 'rem-objects': 8 },
    });
    for (const e of asText) expect(e.actions.every((a) => a.modality === 'image')).toBe(true);
    const dup = generateEpisodes(remEnv, {
      n: 10,
      actions: 4,
      split: 'train',
      seed: 3,
      modality: 'image',
      extra: { 'rem-objects': 10, 'rem-duplicates': 6 },
    });
    for (const e of dup) {
      const types = new Set((e.meta.world as RemWorld).objects.map((o) => `${o.color} ${o.shape}`));
      expect(types.size).toBe(4);
    }
  });

  it('rejects bad options with one clear line', () => {
    expect(() => remOptions({ 'rem-variant': 'half-rotation' })).toThrow(UserError);
    expect(() => remOptions({ 'rem-question': 'colour' })).toThrow(/rem-question/);
    expect(() => remOptions({ 'rem-variant': 'single-frame', 'rem-question': 'temporal' })).toThrow(
      /counting questions only/,
    );
    expect(() =>
      generateEpisodes(remEnv, {
        n: 1,
        actions: 4,
        split: 'train',
        seed: 1,
        modality: 'image',
        extra: { 'rem-objects': 8, 'rem-duplicates': 7 },
      }),
    ).toThrow(/--rem-duplicates/);
    expect(remOptions({ remVariant: 'full-rotation' }).variant).toBe('full-rotation');
    expect(() => remOptions({ 'rem-variant': 'full-rotation', 'rem-objects': 30 })).toThrow(/24 objects/);
    expect(() => remOptions({ 'rem-variant': 'full-rotation', 'rem-duplicates': 3 })).toThrow(/1 or 2/);
  });

  it('prompts with the system prompt, every frame in order and the actions between them', () => {
    const e = baseline[0];
    for (const style of remEnv.promptStyles) {
      const [system, user] = remEnv.prompt(e, { style, shots: [] });
      expect(system.role).toBe('system');
      const images = user.parts.filter((p) => p.type === 'image').map((p) => (p.type === 'image' ? p.ref.index : -1));
      expect(images).toEqual([0, 1, 2, 3, 4, 5]);
      const text = user.parts.map((p) => (p.type === 'text' ? p.text : '<img>')).join('');
      for (const a of e.actions.slice(1)) expect(text).toContain(`Action: ${a.text}`);
      expect(text).toContain(e.question!);
      expect(text).toContain('FINAL ANSWER:');
    }
  });
});
