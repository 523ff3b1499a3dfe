// Shell game image actions: three shells on a table, labelled 1 2 3 left to right, the labels of the two shells being
// swapped drawn in green, the others in near-black; the ball is never shown. Images are square (the built-in VLM
// patches a square 64×64 image; chat VLMs resize freely). Only three pictures exist per size, so each is drawn once
// (shell outlines anti-aliased by supersampling) and every later render is a copy from the cache.
import type { RawImage, Rgb } from '../../core/image.ts';
import { FONT_3X5, FONT_5X7, type PixelFont } from './font.ts';

export type Swap = readonly [number, number];

export const LABEL_GREEN: Rgb = [0, 170, 40];
const LABEL_DARK: Rgb = [25, 25, 25];
const BACKGROUND: Rgb = [236, 240, 245];
const TABLE: Rgb = [205, 190, 165];
const SHELL: Rgb = [176, 112, 60];
const PLATE: Rgb = [250, 250, 250];

// Geometry in units of the image width.
const SHELL_TOP = 0.3;
const SHELL_BOTTOM = 0.72;
const TOP_HALF_WIDTH = 0.085;
const BOTTOM_HALF_WIDTH = 0.14;
const CAP_HEIGHT = 0.06;
const RIM_HEIGHT = 0.025;
const TABLE_TOP = 0.7;
const PLATE_CENTRE_Y = 0.52;
const PLATE_HALF_WIDTH = 0.075;
const PLATE_HALF_HEIGHT = 0.105;
const PLATE_CORNER = 0.03;
const SUPERSAMPLE = 4;

/** Horizontal centre of shell 1, 2 or 3, in units of the width. */
function shellCentre(label: number): number {
  return (2 * label - 1) / 6;
}

/** The font and cell size used for labels at a given width. */
function labelFont(width: number): { font: PixelFont; scale: number } {
  const font = width < 160 ? FONT_3X5 : FONT_5X7;
  const plateHeight = 2 * PLATE_HALF_HEIGHT * width;
  return { font, scale: Math.max(1, Math.floor((plateHeight * 0.75) / font.height)) };
}

/** Which layer a point (in width units) belongs to: 3 plate, 2 shell, 1 table, 0 background. */
function layerAt(x: number, y: number): number {
  for (let label = 1; label <= 3; label++) {
    const dx = Math.abs(x - shellCentre(label));
    if (dx > BOTTOM_HALF_WIDTH + 0.01) continue;
    const px = dx - (PLATE_HALF_WIDTH - PLATE_CORNER);
    const py = Math.abs(y - PLATE_CENTRE_Y) - (PLATE_HALF_HEIGHT - PLATE_CORNER);
    if (Math.hypot(Math.max(px, 0), Math.max(py, 0)) <= PLATE_CORNER) return 3;
    if (y >= SHELL_TOP && y <= SHELL_BOTTOM) {
      const t = (y - SHELL_TOP) / (SHELL_BOTTOM - SHELL_TOP);
      if (dx <= TOP_HALF_WIDTH + t * (BOTTOM_HALF_WIDTH - TOP_HALF_WIDTH)) return 2;
    }
    if (y < SHELL_TOP && (dx / TOP_HALF_WIDTH) ** 2 + ((y - SHELL_TOP) / CAP_HEIGHT) ** 2 <= 1) return 2;
    if (y > SHELL_BOTTOM && (dx / BOTTOM_HALF_WIDTH) ** 2 + ((y - SHELL_BOTTOM) / RIM_HEIGHT) ** 2 <= 1) return 2;
  }
  return y >= TABLE_TOP ? 1 : 0;
}

const LAYER_COLOURS: Rgb[] = [BACKGROUND, TABLE, SHELL, PLATE];

/** The unlabelled scene: table, three shells, three blank label plates. */
function drawBackground(width: number): Uint8Array {
  const data = new Uint8Array(width * width * 3);
  const n = SUPERSAMPLE * SUPERSAMPLE;
  for (let py = 0; py < width; py++) {
    for (let px = 0; px < width; px++) {
      let r = 0,
        g = 0,
        b = 0;
      for (let sy = 0; sy < SUPERSAMPLE; sy++) {
        for (let sx = 0; sx < SUPERSAMPLE; sx++) {
          const c =
            LAYER_COLOURS[layerAt((px + (sx + 0.5) / SUPERSAMPLE) / width, (py + (sy + 0.5) / SUPERSAMPLE) / width)];
          r += c[0];
          g += c[1];
          b += c[2];
        }
      }
      const o = (py * width + px) * 3;
      data[o] = Math.round(r / n);
      data[o + 1] = Math.round(g / n);
      data[o + 2] = Math.round(b / n);
    }
  }
  return data;
}

/** Stamp a label digit, solid colour, centred on the shell's plate. */
function drawLabel(data: Uint8Array, width: number, label: number, colour: Rgb): void {
  const { font, scale } = labelFont(width);
  const glyph = font.glyphs[String(label)];
  const x0 = Math.round(shellCentre(label) * width - (glyph.width * scale) / 2);
  const y0 = Math.round(PLATE_CENTRE_Y * width - (glyph.height * scale) / 2);
  for (let gy = 0; gy < glyph.height; gy++) {
    for (let gx = 0; gx < glyph.width; gx++) {
      if (!glyph.cells[gy * glyph.width + gx]) continue;
      for (let y = y0 + gy * scale; y < y0 + (gy + 1) * scale; y++) {
        for (let x = x0 + gx * scale; x < x0 + (gx + 1) * scale; x++) {
          const o = (y * width + x) * 3;
          data[o] = colour[0];
          data[o + 1] = colour[1];
          data[o + 2] = colour[2];
        }
      }
    }
  }
}

// Finished pictures by "width:a-b". A handful of sizes are in use at any time; the cap only guards odd callers.
const cache = new Map<string, Uint8Array>();
const backgrounds = new Map<number, Uint8Array>();
const MAX_CACHED = 64;

/** Parse "x swap y" into the two shells, or null when malformed. */
export function parseSwap(text: string): Swap | null {
  const m = /^\s*([1-3])\s+swap\s+([1-3])\s*$/.exec(text);
  if (!m || m[1] === m[2]) return null;
  const a = Number(m[1]);
  const b = Number(m[2]);
  return a < b ? [a, b] : [b, a];
}

/** Render the swap of shells a and b as a width×width RGB image (a fresh copy the caller may modify). */
export function renderSwap(swap: Swap, width: number): RawImage {
  if (!Number.isInteger(width) || width < 32)
    throw new RangeError(`shell images need an integer width ≥ 32, got ${width}`);
  const [a, b] = swap[0] < swap[1] ? swap : [swap[1], swap[0]];
  const key = `${width}:${a}-${b}`;
  let picture = cache.get(key);
  if (!picture) {
    let background = backgrounds.get(width);
    if (!background) {
      background = drawBackground(width);
      backgrounds.set(width, background);
    }
    picture = background.slice();
    for (let label = 1; label <= 3; label++)
      drawLabel(picture, width, label, label === a || label === b ? LABEL_GREEN : LABEL_DARK);
    if (cache.size >= MAX_CACHED) {
      cache.clear();
      backgrounds.clear();
    }
    cache.set(key, picture);
  }
  return { width, height: width, channels: 3, data: picture.slice() };
}
