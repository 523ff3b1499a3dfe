// The operations a Qwen-VL vision tower is written over (Qwen2.5-VL's and Qwen3-VL's, models/qwen2_5_vl/vision-tower.ts
// and models/qwen3_vl/vision-tower.ts), and the attention block both towers share. Each tower is defined once over
// these ops and run by two executors: tfjs (models/qwen-vl/tfjs-vision-ops.ts) and ONNX Runtime
// (models/onnx/hf/qwen-vl-vision-graph.ts). Values are rows [N, n] (N patch rows of all images, in the tower's order, or
// N / merge² merged rows); what is per call (row order, segments, rotary angles, position taps) is the executor's,
// from the call's VisionLayout (vision-layout.ts).
import type * as tf from '@tensorflow/tfjs';
import type { QwenVisionActivation } from './config.ts';

/** nn.Linear stored as [in, out] (transposed from the checkpoint's [out, in]), so every product is x @ W. */
export interface QwenLinear {
  weight: tf.Tensor2D;
  bias: tf.Tensor1D | null;
}

export interface QwenLayerNorm {
  weight: tf.Tensor1D;
  bias: tf.Tensor1D;
}

/** Which rows attend to each other: all rows of an image, or (Qwen2.5-VL's windowed blocks) those of one window. */
export type AttentionScope = 'image' | 'window';

export interface QwenVisionOps<T> {
  /** The Conv3d patch embedding as a product: the call's pixel rows [N, C·T·P·P] @ W (+ b) → [N, D]. */
  patchEmbed(w: QwenLinear): T;
  /** Qwen3-VL: the learned position table [n², D] interpolated to each image (the layout's taps) → [N, D]. */
  positionEmbedding(table: tf.Tensor2D): T;
  /** x · rsqrt(mean(x²) + eps) · w over the last axis. */
  rmsNorm(x: T, weight: tf.Tensor1D, eps: number): T;
  layerNorm(x: T, w: QwenLayerNorm, eps: number): T;
  linear(x: T, w: QwenLinear): T;
  /** Columns [start, start + width) of every row. */
  columns(x: T, start: number, width: number): T;
  /** The 2-D rotary (rotate-half) of q or k rows [N, heads · head_dim] with the layout's cos / sin. */
  rotary(x: T, heads: number): T;
  /** softmax(q kᵀ · scale) v head by head within each segment of `scope`; q, k, v and the result [N, heads · hd]. */
  attention(q: T, k: T, v: T, heads: number, scale: number, scope: AttentionScope): T;
  activation(x: T, act: QwenVisionActivation): T;
  mul(a: T, b: T): T;
  add(a: T, b: T): T;
  /** [N, width] → [N / unit, unit · width]: each merge block's `unit` consecutive rows side by side. */
  mergeUnits(x: T, unit: number, width: number): T;
  /** Merged rows from the tower's order back to image order (Qwen2.5-VL's inverse window permutation). */
  imageOrder(x: T): T;
  /** One block applied to `x` (tfjs: in a scope of its own, which frees the block's intermediates). */
  layer(x: T, f: (x: T) => T): T;
}

/**
 * The attention half of a block, shared by both towers: qkv = x @ W_qkv + b ([N, 3D]: q, k, v side by side, each
 * [N, heads · hd]), 2-D rotary on q and k, attention within `scope`, then the output projection.
 */
export function visionAttention<T>(
  ops: QwenVisionOps<T>,
  x: T,
  w: { qkv: QwenLinear; proj: QwenLinear },
  hidden: number,
  heads: number,
  scope: AttentionScope,
): T {
  const qkv = ops.linear(x, w.qkv);
  const q = ops.rotary(ops.columns(qkv, 0, hidden), heads);
  const k = ops.rotary(ops.columns(qkv, hidden, hidden), heads);
  const v = ops.columns(qkv, 2 * hidden, hidden);
  return ops.linear(ops.attention(q, k, v, heads, (hidden / heads) ** -0.5, scope), w.proj);
}
