// Reads a rendered move image back into its UCI move from the pixels alone: which square is mostly green (from),
// which is mostly red (to), and, for a promotion, the colour code in the to-square's centre and (at labelled sizes)
// the drawn letter. Tests use it to prove that every image carries exactly its action; it also documents the
// image format for anyone training a perception model on it.
import type { RawImage, Rgb } from '../../core/image.ts';
import { GLYPHS, GLYPH_HEIGHT, GLYPH_WIDTH } from './font.ts';
import { boardLayout, COLORS, PROMOTION_COLORS, promotionRect, type BoardLayout, type Rect } from './render.ts';
import { formatUci, PROMOTION_PIECES, type PromotionPiece, type SquareCoord } from './uci.ts';

export interface DecodedMove {
  uci: string;
  /** Promotion piece read from the colour code, or null. */
  promotion: PromotionPiece | null;
  /** Promotion piece read from the drawn letter (labelled sizes only), or null. */
  letter: PromotionPiece | null;
}

/** Colour distance below which a pixel counts as that palette colour (PNG is lossless, so this is only slack). */
const TOLERANCE = 40;
/** Share of a square that must be its highlight colour. */
const MIN_SHARE = 0.3;

function near(data: Uint8Array, i: number, rgb: Rgb): boolean {
  return Math.abs(data[i] - rgb[0]) + Math.abs(data[i + 1] - rgb[1]) + Math.abs(data[i + 2] - rgb[2]) <= TOLERANCE;
}

function countIn(image: RawImage, rect: Rect, test: (i: number) => boolean): number {
  let n = 0;
  for (let y = rect.y; y < rect.y + rect.h; y++) {
    for (let x = rect.x, i = (y * image.width + x) * 3; x < rect.x + rect.w; x++, i += 3) if (test(i)) n++;
  }
  return n;
}

/** Per square (index rank * 8 + file), how many pixels are near `rgb`; one pass over the board. */
function colourCounts(image: RawImage, layout: BoardLayout, rgb: Rgb): Int32Array {
  const counts = new Int32Array(64);
  const { square, originX, originY } = layout;
  const [r, g, b] = rgb;
  const data = image.data;
  for (let y = originY; y < originY + 8 * square; y++) {
    const rank = 7 - Math.floor((y - originY) / square);
    for (let x = originX, i = (y * image.width + x) * 3; x < originX + 8 * square; x++, i += 3) {
      if (Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) <= TOLERANCE) {
        counts[rank * 8 + Math.floor((x - originX) / square)]++;
      }
    }
  }
  return counts;
}

/** The one square whose share of `rgb` pixels reaches MIN_SHARE; an error when none or several do. */
function uniqueSquare(image: RawImage, layout: BoardLayout, rgb: Rgb, what: string): SquareCoord {
  const counts = colourCounts(image, layout, rgb);
  const hits: SquareCoord[] = [];
  counts.forEach((n, index) => {
    if (n >= MIN_SHARE * layout.square * layout.square) hits.push({ file: index % 8, rank: Math.floor(index / 8) });
  });
  if (hits.length !== 1) throw new Error(`expected exactly one ${what} square, found ${hits.length}`);
  return hits[0];
}

/** Read the letter glyph inside a badge: bounding box of the black ink, sampled on the 5×7 grid, nearest glyph. */
function readLetter(image: RawImage, badge: Rect): PromotionPiece | null {
  let x0 = Infinity,
    y0 = Infinity,
    x1 = -Infinity,
    y1 = -Infinity;
  for (let y = badge.y; y < badge.y + badge.h; y++) {
    for (let x = badge.x; x < badge.x + badge.w; x++) {
      if (near(image.data, (y * image.width + x) * 3, COLORS.promotionLetter)) {
        x0 = Math.min(x0, x);
        y0 = Math.min(y0, y);
        x1 = Math.max(x1, x);
        y1 = Math.max(y1, y);
      }
    }
  }
  if (x0 > x1) return null;
  const cellW = (x1 - x0 + 1) / GLYPH_WIDTH;
  const cellH = (y1 - y0 + 1) / GLYPH_HEIGHT;
  let best: PromotionPiece | null = null;
  let bestMismatch = Infinity;
  for (const piece of PROMOTION_PIECES) {
    const bitmap = GLYPHS[piece.toUpperCase()];
    let mismatch = 0;
    for (let r = 0; r < GLYPH_HEIGHT; r++) {
      for (let c = 0; c < GLYPH_WIDTH; c++) {
        const x = Math.floor(x0 + (c + 0.5) * cellW);
        const y = Math.floor(y0 + (r + 0.5) * cellH);
        const ink = near(image.data, (y * image.width + x) * 3, COLORS.promotionLetter);
        if (ink !== bitmap[r][c]) mismatch++;
      }
    }
    if (mismatch < bestMismatch) {
      bestMismatch = mismatch;
      best = piece;
    }
  }
  return bestMismatch <= 2 ? best : null;
}

export function decodeMoveImage(image: RawImage): DecodedMove {
  if (image.width !== image.height) throw new Error(`move images are square, got ${image.width}×${image.height}`);
  const layout = boardLayout(image.width);
  const from = uniqueSquare(image, layout, COLORS.from, 'green');
  const to = uniqueSquare(image, layout, COLORS.to, 'red');
  const badge = promotionRect(layout, to);
  let promotion: PromotionPiece | null = null;
  let bestCount = 0;
  for (const piece of PROMOTION_PIECES) {
    const count = countIn(image, badge, (i) => near(image.data, i, PROMOTION_COLORS[piece]));
    if (count > bestCount) {
      bestCount = count;
      promotion = piece;
    }
  }
  if (bestCount < 0.25 * badge.w * badge.h) promotion = null;
  const letter = promotion && layout.labelled ? readLetter(image, badge) : null;
  return { uci: formatUci({ from, to, promotion }), promotion, letter };
}
