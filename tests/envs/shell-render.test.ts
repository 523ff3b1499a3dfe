// Shell image actions carry exactly their swap: a decoder that knows only the colours and the font (not the layout)
// finds the three label glyphs in the pixels, reads each digit, and reports which are green. Several hundred random
// swaps at both sizes, straight from the renderer and after a PNG round trip.
import { describe, expect, it } from 'vitest';
import { shellEnv } from '../../envs/shell/index.ts';
import { FONT_3X5, FONT_5X7, type PixelFont } from '../../envs/shell/font.ts';
import { SWAP_PAIRS, swapText } from '../../envs/shell/episodes.ts';
import { decodePng, encodePng } from '../../core/image.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { Rng } from '../../core/rng.ts';
import type { Episode } from '../../core/episode.ts';
import type { RawImage } from '../../core/image.ts';

type Ink = 'green' | 'dark' | null;

function inkAt(image: RawImage, x: number, y: number): Ink {
  const o = (y * image.width + x) * 3;
  const [r, g, b] = [image.data[o], image.data[o + 1], image.data[o + 2]];
  if (g > 120 && r < 80 && b < 100) return 'green';
  if (r < 70 && g < 70 && b < 70) return 'dark';
  return null;
}

interface DecodedLabel {
  digit: string;
  green: boolean;
}

/** Read a glyph in the bounding box by sampling the centre of each font cell; the digit whose cells match exactly. */
function readGlyph(
  image: RawImage,
  box: { x0: number; x1: number; y0: number; y1: number },
  fonts: PixelFont[],
): string | null {
  const matches = new Set<string>();
  const boxHeight = box.y1 - box.y0 + 1;
  const boxWidth = box.x1 - box.x0 + 1;
  for (const font of fonts) {
    if (boxHeight % font.height !== 0) continue;
    const cell = boxHeight / font.height;
    for (const [digit, glyph] of Object.entries(font.glyphs)) {
      // Glyphs may not use their first or last columns; compare within the glyph's own inked columns.
      const used = [...Array(glyph.width).keys()].filter((c) =>
        [...Array(glyph.height).keys()].some((r) => glyph.cells[r * glyph.width + c]),
      );
      const first = used[0];
      const width = used[used.length - 1] - first + 1;
      if (width * cell !== boxWidth) continue;
      let same = true;
      for (let r = 0; r < glyph.height && same; r++) {
        for (let c = 0; c < width && same; c++) {
          const x = box.x0 + Math.floor((c + 0.5) * cell);
          const y = box.y0 + Math.floor((r + 0.5) * cell);
          same = (inkAt(image, x, y) !== null) === glyph.cells[r * glyph.width + first + c];
        }
      }
      if (same) matches.add(digit);
    }
  }
  return matches.size === 1 ? [...matches][0] : null;
}

/** Find the inked glyphs left to right (runs of columns holding ink), read each and its colour. */
function decodeLabels(image: RawImage): DecodedLabel[] {
  const columnHasInk = (x: number) => {
    for (let y = 0; y < image.height; y++) if (inkAt(image, x, y)) return true;
    return false;
  };
  const labels: DecodedLabel[] = [];
  let x = 0;
  while (x < image.width) {
    if (!columnHasInk(x)) {
      x++;
      continue;
    }
    const x0 = x;
    while (x < image.width && columnHasInk(x)) x++;
    const x1 = x - 1;
    let y0 = image.height;
    let y1 = -1;
    let green = 0;
    let dark = 0;
    for (let yy = 0; yy < image.height; yy++) {
      for (let xx = x0; xx <= x1; xx++) {
        const ink = inkAt(image, xx, yy);
        if (!ink) continue;
        y0 = Math.min(y0, yy);
        y1 = Math.max(y1, yy);
        if (ink === 'green') green++;
        else dark++;
      }
    }
    const digit = readGlyph(image, { x0, x1, y0, y1 }, [FONT_3X5, FONT_5X7]);
    labels.push({ digit: digit ?? '?', green: green > 0 && dark === 0 });
  }
  return labels;
}

/** The swap an image shows, from pixels alone, or an explanation of what is wrong with it. */
function decodeSwap(image: RawImage): string {
  const labels = decodeLabels(image);
  const digits = labels.map((l) => l.digit).join('');
  if (digits !== '123') return `labels read as '${digits}'`;
  const green = labels.filter((l) => l.green).map((l) => l.digit);
  if (green.length !== 2) return `${green.length} green labels`;
  return `${green[0]} swap ${green[1]}`;
}

function randomEpisodes(count: number, seed: number): Episode[] {
  return generateEpisodes(shellEnv, { n: count, actions: 4, split: 'train', seed, modality: 'image' });
}

describe('shell renderer', () => {
  it.each([shellEnv.imageSizes.model, shellEnv.imageSizes.chat])('draws square %i px images', (size) => {
    const image = shellEnv.renderAction(randomEpisodes(1, 1)[0], 0, size);
    expect([image.width, image.height, image.data.length]).toEqual([size, size, size * size * 3]);
  });

  it.each([shellEnv.imageSizes.model, shellEnv.imageSizes.chat])(
    'every swap decodes from the pixels at %i px',
    (size) => {
      let decoded = 0;
      for (const episode of randomEpisodes(100, 7 + size)) {
        episode.actions.forEach((action, index) => {
          expect(decodeSwap(shellEnv.renderAction(episode, index, size))).toBe(action.text);
          decoded++;
        });
      }
      expect(decoded).toBe(400);
    },
  );

  it.each([shellEnv.imageSizes.model, shellEnv.imageSizes.chat])(
    'swaps survive a PNG round trip at %i px',
    async (size) => {
      for (const episode of randomEpisodes(75, 11 + size)) {
        for (let index = 0; index < episode.actions.length; index++) {
          const png = await encodePng(shellEnv.renderAction(episode, index, size));
          expect(decodeSwap(await decodePng(png))).toBe(episode.actions[index].text);
        }
      }
    },
  );

  it.each([32, 48, 96, 128, 160, 200, 256, 384, 768])('labels stay readable at other widths (%i px)', (size) => {
    const episode = randomEpisodes(3, size)[0];
    for (let i = 0; i < episode.actions.length; i++)
      expect(decodeSwap(shellEnv.renderAction(episode, i, size))).toBe(episode.actions[i].text);
  });

  it('the three swaps give three different images, whatever the ball does', () => {
    const rng = new Rng(3);
    const seen = new Map<string, string>();
    for (let i = 0; i < 30; i++) {
      const pair = rng.pick(SWAP_PAIRS);
      const start = String(rng.range(1, 3));
      const episode: Episode = {
        id: `e${i}`,
        domain: 'shell',
        split: 'test',
        initialState: start,
        target: start,
        meta: {},
        actions: [{ text: swapText(pair), modality: 'image' }],
      };
      const bytes = Buffer.from(shellEnv.renderAction(episode, 0, 64).data).toString('base64');
      const previous = seen.get(swapText(pair));
      if (previous) expect(bytes).toBe(previous);
      seen.set(swapText(pair), bytes);
    }
    expect(new Set(seen.values()).size).toBe(3);
  });

  it('returns a fresh copy each time, so callers cannot corrupt the cache', () => {
    const episode = randomEpisodes(1, 5)[0];
    const first = shellEnv.renderAction(episode, 0, 64);
    first.data.fill(0);
    expect(decodeSwap(shellEnv.renderAction(episode, 0, 64))).toBe(episode.actions[0].text);
  });

  it('rejects an action that is not a swap', () => {
    const episode: Episode = {
      id: 'bad',
      domain: 'shell',
      split: 'test',
      initialState: '1',
      target: '1',
      meta: {},
      actions: [{ text: '2 swap 2', modality: 'image' }],
    };
    expect(() => shellEnv.renderAction(episode, 0, 64)).toThrow(/not "x swap y"/);
  });
});
