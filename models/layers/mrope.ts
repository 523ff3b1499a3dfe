// Multimodal RoPE tables (Qwen-VL language models): rotate-half RoPE (models/layers/rope.ts) whose head_dim / 2
// frequency slots are driven by three position axes instead of one: temporal, height and width ids (rope-index.ts).
// Which axis drives slot j is the layout's business:
//
//   chunked (Qwen2-VL, Qwen2.5-VL; mrope_section [t, h, w]):  slots [0, t) temporal, [t, t+h) height, [t+h, t+h+w) width
//   interleaved (Qwen3-VL):  slot j height if j % 3 == 1 and j < 3h, width if j % 3 == 2 and j < 3w, temporal otherwise
//
// cos / sin = [f, f] with f[n, j] = position[axis(j)][n] · inv_freq[j] in float32, the second half repeating the first
// (so the chunked layout's sections apply to both halves, as transformers' doubled mrope_section does). Text rows have
// equal ids on the three axes, where either layout is plain RoPE.
import * as tf from '@tensorflow/tfjs';
import { inverseFrequencies, type RopeTable } from './rope.ts';

export type MropeLayout = 'chunked' | 'interleaved';

/** What the multimodal RoPE of one language model needs (read by the architectures' config readers). */
export interface MropeSpec {
  /** mrope_section [t, h, w]: frequency slots per axis, summing to headDim / 2. */
  section: readonly [number, number, number];
  layout: MropeLayout;
  headDim: number;
  theta: number;
}

/** For each of the headDim / 2 frequency slots, the axis whose ids drive it: 0 temporal, 1 height, 2 width. */
export function mropeSlotAxes(spec: MropeSpec): Uint8Array {
  const half = spec.headDim / 2;
  const [t, h, w] = spec.section;
  if (t + h + w !== half)
    throw new Error(`mrope_section [${spec.section}] sums to ${t + h + w}, not head_dim / 2 = ${half}`);
  const axes = new Uint8Array(half);
  for (let j = 0; j < half; j++) {
    if (spec.layout === 'chunked') axes[j] = j < t ? 0 : j < t + h ? 1 : 2;
    else axes[j] = j % 3 === 1 && j < 3 * h ? 1 : j % 3 === 2 && j < 3 * w ? 2 : 0;
  }
  return axes;
}

/**
 * cos / sin [N, headDim] (row-major) for N rows whose positions are `positions` [3, N] (temporal ids, then height,
 * then width; e.g. rope-index.ts's [3, B, L] with N = B·L).
 */
export function mropeValues(positions: Int32Array, spec: MropeSpec): { cos: Float32Array; sin: Float32Array } {
  if (positions.length % 3 !== 0) throw new Error(`mropeValues: ${positions.length} position ids are not [3, N]`);
  const n = positions.length / 3;
  const axes = mropeSlotAxes(spec);
  const invFreq = inverseFrequencies(spec.headDim, spec.theta);
  const half = invFreq.length;
  const d = spec.headDim;
  const cos = new Float32Array(n * d);
  const sin = new Float32Array(n * d);
  for (let r = 0; r < n; r++) {
    for (let j = 0; j < half; j++) {
      const angle = Math.fround(positions[axes[j] * n + r] * invFreq[j]);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[r * d + j] = c;
      cos[r * d + half + j] = c;
      sin[r * d + j] = s;
      sin[r * d + half + j] = s;
    }
  }
  return { cos, sin };
}

/** mropeValues as the decoder's [N, 1, d] table (constants). */
export function mropeTable(positions: Int32Array, spec: MropeSpec): RopeTable {
  const n = positions.length / 3;
  const { cos, sin } = mropeValues(positions, spec);
  return { cos: tf.tensor3d(cos, [n, 1, spec.headDim]), sin: tf.tensor3d(sin, [n, 1, spec.headDim]) };
}
