// Image actions for chess: a move drawn on an otherwise empty board (no pieces, so the position cannot be read off
// the image). Light and dark squares, the from-square green, the to-square red, a blue arrow from the centre of one to
// the centre of the other. Castling shows the king's move (e1g1), as UCI writes it.
//
// Sizes: from 128 px up the board has file letters (a-h, below) and rank digits (1-8, left) in a margin of size/16,
// and a promotion shows a badge in the to-square centre: the promoted piece's letter (Q R B N, black) on a square in
// the piece's colour code. Below 128 px (the built-in model's 64 px, 8 px per square) the board fills the image, there
// are no labels, and a promotion is the colour code alone: a block of half the square's side in its centre.
// Colour code: queen gold, rook cyan, bishop magenta, knight white — none of them used anywhere else on the board.
//
// Speed: the empty board of each size is drawn once and cached; a move image is a copy of it plus two filled
// squares, two small convex polygons (arrow shaft and head) and at most a badge. No anti-aliasing: every pixel is one
// of a handful of palette colours, which also makes the images exactly decodable (envs/chess/decode.ts).
import { UserError } from '../../core/errors.ts';
import type { RawImage, Rgb } from '../../core/image.ts';
import { GLYPH_HEIGHT, GLYPH_WIDTH, glyph } from './font.ts';
import { parseUci, type PromotionPiece, type SquareCoord } from './uci.ts';

export const COLORS = {
  light: [240, 217, 181] as Rgb,
  dark: [181, 136, 99] as Rgb,
  margin: [255, 255, 255] as Rgb,
  label: [40, 40, 40] as Rgb,
  from: [0, 190, 0] as Rgb,
  to: [220, 0, 0] as Rgb,
  arrow: [30, 60, 200] as Rgb,
  promotionLetter: [0, 0, 0] as Rgb,
};

export const PROMOTION_COLORS: Record<PromotionPiece, Rgb> = {
  q: [255, 215, 0],
  r: [0, 200, 230],
  b: [210, 0, 210],
  n: [255, 255, 255],
};

/** Smallest size with labels and letter badges. */
const LABELLED_MIN_SIZE = 128;
const MIN_SIZE = 32;

export interface BoardLayout {
  size: number;
  /** Side of one square in pixels. */
  square: number;
  /** Top-left pixel of a8's column and rank-8 row, i.e. of the board. */
  originX: number;
  originY: number;
  /** Width of the label margin (left and bottom), 0 without labels. */
  margin: number;
  labelled: boolean;
}

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export function boardLayout(size: number): BoardLayout {
  if (!Number.isInteger(size) || size < MIN_SIZE)
    throw new UserError(`chess image size must be an integer of at least ${MIN_SIZE} px, got ${size}`);
  const labelled = size >= LABELLED_MIN_SIZE;
  const margin = labelled ? Math.round(size / 16) : 0;
  const square = Math.floor((size - margin) / 8);
  const spare = size - margin - 8 * square;
  return { size, square, originX: margin + Math.floor(spare / 2), originY: Math.floor(spare / 2), margin, labelled };
}

function squareRect(layout: BoardLayout, sq: SquareCoord): Rect {
  return {
    x: layout.originX + sq.file * layout.square,
    y: layout.originY + (7 - sq.rank) * layout.square,
    w: layout.square,
    h: layout.square,
  };
}

/** The promotion badge (or colour block) inside the to-square. */
export function promotionRect(layout: BoardLayout, to: SquareCoord): Rect {
  const cell = squareRect(layout, to);
  const side = layout.labelled ? Math.round(layout.square * 0.6) : Math.max(2, Math.round(layout.square / 2));
  return { x: cell.x + Math.floor((cell.w - side) / 2), y: cell.y + Math.floor((cell.h - side) / 2), w: side, h: side };
}

function fillRect(data: Uint8Array, width: number, rect: Rect, rgb: Rgb): void {
  for (let y = rect.y; y < rect.y + rect.h; y++) {
    let i = (y * width + rect.x) * 3;
    for (let x = 0; x < rect.w; x++, i += 3) {
      data[i] = rgb[0];
      data[i + 1] = rgb[1];
      data[i + 2] = rgb[2];
    }
  }
}

/** Fill a convex polygon, sampling pixel centres, clipped to the image. */
function fillConvexPolygon(
  data: Uint8Array,
  width: number,
  height: number,
  points: Array<[number, number]>,
  rgb: Rgb,
): void {
  const ys = points.map((p) => p[1]);
  const yStart = Math.max(0, Math.floor(Math.min(...ys)));
  const yEnd = Math.min(height - 1, Math.ceil(Math.max(...ys)));
  for (let y = yStart; y <= yEnd; y++) {
    const yc = y + 0.5;
    let lo = Infinity;
    let hi = -Infinity;
    for (let k = 0; k < points.length; k++) {
      const [x1, y1] = points[k];
      const [x2, y2] = points[(k + 1) % points.length];
      if ((yc < y1 && yc < y2) || (yc > y1 && yc > y2) || y1 === y2) continue;
      const x = x1 + ((yc - y1) / (y2 - y1)) * (x2 - x1);
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    if (lo > hi) continue;
    const xStart = Math.max(0, Math.ceil(lo - 0.5));
    const xEnd = Math.min(width - 1, Math.floor(hi - 0.5));
    for (let x = xStart, i = (y * width + xStart) * 3; x <= xEnd; x++, i += 3) {
      data[i] = rgb[0];
      data[i + 1] = rgb[1];
      data[i + 2] = rgb[2];
    }
  }
}

function drawGlyph(
  data: Uint8Array,
  width: number,
  ch: string,
  centerX: number,
  centerY: number,
  scale: number,
  rgb: Rgb,
): void {
  const bitmap = glyph(ch);
  const x0 = Math.round(centerX - (GLYPH_WIDTH * scale) / 2);
  const y0 = Math.round(centerY - (GLYPH_HEIGHT * scale) / 2);
  for (let r = 0; r < GLYPH_HEIGHT; r++) {
    for (let c = 0; c < GLYPH_WIDTH; c++) {
      if (bitmap[r][c]) fillRect(data, width, { x: x0 + c * scale, y: y0 + r * scale, w: scale, h: scale }, rgb);
    }
  }
}

function drawEmptyBoard(layout: BoardLayout): Uint8Array {
  const { size } = layout;
  const data = new Uint8Array(size * size * 3);
  fillRect(data, size, { x: 0, y: 0, w: size, h: size }, COLORS.margin);
  for (let rank = 0; rank < 8; rank++) {
    for (let file = 0; file < 8; file++) {
      fillRect(data, size, squareRect(layout, { file, rank }), (file + rank) % 2 === 0 ? COLORS.dark : COLORS.light);
    }
  }
  if (layout.labelled) {
    const scale = Math.max(1, Math.floor((layout.margin * 0.7) / GLYPH_HEIGHT));
    const boardBottom = layout.originY + 8 * layout.square;
    for (let i = 0; i < 8; i++) {
      const cellCenter = layout.square * i + layout.square / 2;
      drawGlyph(
        data,
        size,
        'abcdefgh'[i],
        layout.originX + cellCenter,
        boardBottom + layout.margin / 2,
        scale,
        COLORS.label,
      );
      drawGlyph(
        data,
        size,
        String(8 - i),
        layout.originX - layout.margin / 2,
        layout.originY + cellCenter,
        scale,
        COLORS.label,
      );
    }
  }
  return data;
}

const backgrounds = new Map<number, { layout: BoardLayout; pixels: Uint8Array }>();

function background(size: number): { layout: BoardLayout; pixels: Uint8Array } {
  let entry = backgrounds.get(size);
  if (!entry) {
    const layout = boardLayout(size);
    entry = { layout, pixels: drawEmptyBoard(layout) };
    backgrounds.set(size, entry);
  }
  return entry;
}

/** Arrow from the centre of `from` to the centre of `to`: a shaft quad and a head triangle whose tip is the centre. */
function drawArrow(data: Uint8Array, layout: BoardLayout, from: SquareCoord, to: SquareCoord): void {
  const a = squareRect(layout, from);
  const b = squareRect(layout, to);
  const ax = a.x + a.w / 2;
  const ay = a.y + a.h / 2;
  const bx = b.x + b.w / 2;
  const by = b.y + b.h / 2;
  const length = Math.hypot(bx - ax, by - ay);
  const dx = (bx - ax) / length;
  const dy = (by - ay) / length;
  const px = -dy;
  const py = dx;
  const sq = layout.square;
  const shaftHalf = Math.max(1, sq * 0.08);
  const headLength = Math.min(length * 0.6, Math.max(3, sq * 0.45));
  const headHalf = Math.max(2, sq * 0.28);
  const baseX = bx - dx * headLength;
  const baseY = by - dy * headLength;
  const size = layout.size;
  fillConvexPolygon(
    data,
    size,
    size,
    [
      [ax + px * shaftHalf, ay + py * shaftHalf],
      [baseX + px * shaftHalf, baseY + py * shaftHalf],
      [baseX - px * shaftHalf, baseY - py * shaftHalf],
      [ax - px * shaftHalf, ay - py * shaftHalf],
    ],
    COLORS.arrow,
  );
  fillConvexPolygon(
    data,
    size,
    size,
    [
      [bx, by],
      [baseX + px * headHalf, baseY + py * headHalf],
      [baseX - px * headHalf, baseY - py * headHalf],
    ],
    COLORS.arrow,
  );
}

/** Render a UCI move as an image `size` pixels square. */
export function renderMove(uci: string, size: number): RawImage {
  const move = parseUci(uci);
  if (!move) throw new UserError(`not a UCI move: '${uci}'`);
  const { layout, pixels } = background(size);
  const data = pixels.slice();
  fillRect(data, size, squareRect(layout, move.from), COLORS.from);
  fillRect(data, size, squareRect(layout, move.to), COLORS.to);
  drawArrow(data, layout, move.from, move.to);
  if (move.promotion) {
    const badge = promotionRect(layout, move.to);
    fillRect(data, size, badge, PROMOTION_COLORS[move.promotion]);
    if (layout.labelled) {
      const scale = Math.max(1, Math.floor((badge.h * 0.8) / GLYPH_HEIGHT));
      drawGlyph(
        data,
        size,
        move.promotion.toUpperCase(),
        badge.x + badge.w / 2,
        badge.y + badge.h / 2,
        scale,
        COLORS.promotionLetter,
      );
    }
  }
  return { width: size, height: size, channels: 3, data };
}
