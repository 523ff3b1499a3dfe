// The host-side description of one call of a Qwen-VL vision tower: for the patch rows of the images given (image 0's
// first, merge-block order within each, as the image processor writes them), the order the tower runs them in, which
// rows attend to each other, their 2-D rotary angles, and how the merged output rows return to image order. Both
// executors of a tower (tfjs: models/qwen-vl/tfjs-vision-ops.ts; ONNX Runtime: models/onnx/hf/qwen-vl-vision-graph.ts)
// read it; each architecture builds its own (models/qwen2_5_vl/vision-tower.ts, models/qwen3_vl/vision-tower.ts).
//
// 2-D rotary: a patch at full-resolution (row, column) gets, per head, angles [row · f, column · f] (f = the
// d/4 inverse frequencies 1 / 10000^(2i / (d/2)), d = head_dim), cos / sin = [angles, angles] (rotate-half layout).
import { inverseFrequencies } from '../layers/rope.ts';
import { type GridThw, patchCount } from './grid.ts';

/** Segments as transformers' cu_seqlens: segment s is tower rows [cu[s], cu[s + 1]), none empty. */
export type Segments = Int32Array;

/** Qwen3-VL's interpolated position embedding: row r is Σ_j weight[j·rows + r] · table[index[j·rows + r]], j < 4. */
export interface PositionTaps {
  index: Int32Array;
  weight: Float32Array;
}

export interface VisionLayout {
  grids: readonly GridThw[];
  /** Patch rows of all images. */
  rows: number;
  headDim: number;
  /** The pixel row each tower row is (the tower runs its rows in this order); null: the pixel rows' own order. */
  order: Int32Array | null;
  /** For each merged output row in image order, the merged tower row it is; null: the tower's order is image order. */
  restore: Int32Array | null;
  /** [rows, headDim] rotary cos and sin of each tower row. */
  cos: Float32Array;
  sin: Float32Array;
  /** Rows that attend to each other: each image, and (Qwen2.5-VL) each attention window. */
  segments: { image: Segments; window: Segments | null };
  positionTaps: PositionTaps | null;
}

/** Full-resolution (row, column) of every patch row, in the image processor's merge-block order. */
export function patchCoordinates(grids: readonly GridThw[], merge: number): { row: Int32Array; col: Int32Array } {
  const total = grids.reduce((n, g) => n + patchCount(g), 0);
  const row = new Int32Array(total);
  const col = new Int32Array(total);
  let i = 0;
  for (const [t, h, w] of grids)
    for (let f = 0; f < t; f++)
      for (let br = 0; br < h / merge; br++)
        for (let bc = 0; bc < w / merge; bc++)
          for (let r = 0; r < merge; r++)
            for (let c = 0; c < merge; c++, i++) {
              row[i] = br * merge + r;
              col[i] = bc * merge + c;
            }
  return { row, col };
}

/** cos / sin [rows, headDim] of the 2-D rotary for the given tower order (null: pixel order). */
export function rotaryTables(
  grids: readonly GridThw[],
  merge: number,
  headDim: number,
  order: Int32Array | null,
): { cos: Float32Array; sin: Float32Array } {
  const { row, col } = patchCoordinates(grids, merge);
  const inv = inverseFrequencies(headDim / 2, 10000); // d/4 frequencies
  const quarter = inv.length;
  const half = 2 * quarter;
  const n = row.length;
  const cos = new Float32Array(n * headDim);
  const sin = new Float32Array(n * headDim);
  for (let i = 0; i < n; i++) {
    const p = order ? order[i] : i;
    for (let j = 0; j < half; j++) {
      const angle = Math.fround((j < quarter ? row[p] : col[p]) * inv[j % quarter]);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[i * headDim + j] = c;
      cos[i * headDim + half + j] = c;
      sin[i * headDim + j] = s;
      sin[i * headDim + half + j] = s;
    }
  }
  return { cos, sin };
}

/** One segment per image (its t · h · w rows; images have t = 1). */
export function imageSegments(grids: readonly GridThw[]): Segments {
  const cu = new Int32Array(grids.length + 1);
  grids.forEach((g, i) => (cu[i + 1] = cu[i] + patchCount(g)));
  return cu;
}

/** Pixel rows [rows, width] in the layout's order (a copy; the same array when the order is the pixel order). */
export function towerRows(pixels: Float32Array, width: number, layout: VisionLayout): Float32Array {
  if (pixels.length !== layout.rows * width)
    throw new Error(`vision tower: ${pixels.length} pixel values for ${layout.rows} rows of ${width}`);
  const order = layout.order;
  if (!order) return pixels;
  const out = new Float32Array(pixels.length);
  for (let i = 0; i < order.length; i++) out.set(pixels.subarray(order[i] * width, (order[i] + 1) * width), i * width);
  return out;
}
