// Qwen2.5-VL's vision tower (Qwen2_5_VisionTransformerPretrainedModel), written once over the Qwen-VL vision ops
// (models/qwen-vl/vision-ops.ts) and run by tfjs (qwen25VisionForward here) and ONNX Runtime
// (models/onnx/hf/qwen-vl-vision-graph.ts):
//
//   pixel rows [N, C·T·P·P] @ W_patch                       (Conv3d with kernel = stride = (T, P, P), no bias)
//   rows regrouped window by window (window-index.ts), rotary angles with them
//   × depth:  h += proj(attn(RMSNorm1(h)))                 (2-D rotary; within the window, or the image for the
//             h += down(silu(gate(RMSNorm2(h))) · up(·))    fullatt_block_indexes blocks)
//   merger:   RMSNorm(ln_q) → [N/4, 4D] (2×2 merge block) → Linear → GELU (erf) → Linear → [N/4, out_hidden]
//   merged rows back in image order: image 0's tokens first, row-major over its merged grid
//
// The output rows are the features that replace the `<|image_pad|>` embeddings, in order.
import type * as tf from '@tensorflow/tfjs';
import { checkImageGrids, type GridThw } from '../qwen-vl/grid.ts';
import { runTfjsTower } from '../qwen-vl/tfjs-vision-ops.ts';
import { imageSegments, rotaryTables, type VisionLayout } from '../qwen-vl/vision-layout.ts';
import { type QwenVisionOps, visionAttention } from '../qwen-vl/vision-ops.ts';
import type { Qwen25VisionConfig } from './config.ts';
import type { Qwen25VisionWeights } from './vision-weights.ts';
import { windowIndex } from './window-index.ts';

/** RMSNorm epsilon of every norm in the tower (fixed in the modeling code, not a config key). */
const EPS = 1e-6;

/** The host-side description of one call (models/qwen-vl/vision-layout.ts): window order, segments, rotary angles. */
export function qwen25VisionLayout(grids: readonly GridThw[], config: Qwen25VisionConfig): VisionLayout {
  const m = config.spatialMergeSize;
  checkImageGrids(grids, m);
  const unit = m * m;
  const { units, segments: window } = windowIndex(grids, config.windowSize, m, config.patchSize);
  const order = new Int32Array(units.length * unit); // tower row i is pixel row order[i]
  units.forEach((u, i) => {
    for (let j = 0; j < unit; j++) order[i * unit + j] = u * unit + j;
  });
  const restore = new Int32Array(units.length); // argsort(window_index): where each image-order unit went
  units.forEach((u, i) => (restore[u] = i));
  const headDim = config.hiddenSize / config.numHeads;
  return {
    grids,
    rows: order.length,
    headDim,
    order,
    restore,
    ...rotaryTables(grids, m, headDim, order),
    // Window order keeps each image's rows together, so the images' segments are the same in both orders.
    segments: { image: imageSegments(grids), window },
    positionTaps: null,
  };
}

/** The tower's definition (see the header): merged image features [N / merge², out_hidden], image order. */
export function qwen25VisionTower<T>(
  ops: QwenVisionOps<T>,
  weights: Qwen25VisionWeights,
  config: Qwen25VisionConfig,
): T {
  const D = config.hiddenSize;
  const full = new Set(config.fullattBlockIndexes);
  let h = ops.patchEmbed(weights.patch);
  weights.blocks.forEach((block, i) => {
    h = ops.layer(h, (x) => {
      const scope = full.has(i) ? 'image' : 'window';
      const a = ops.add(x, visionAttention(ops, ops.rmsNorm(x, block.norm1, EPS), block, D, config.numHeads, scope));
      const n = ops.rmsNorm(a, block.norm2, EPS);
      const gated = ops.mul(ops.activation(ops.linear(n, block.gate), config.hiddenAct), ops.linear(n, block.up));
      return ops.add(a, ops.linear(gated, block.down));
    });
  });
  const { lnQ, fc1, fc2 } = weights.merger;
  const merged = ops.mergeUnits(ops.rmsNorm(h, lnQ, EPS), config.spatialMergeSize ** 2, D); // [N/4, 4D]
  return ops.imageOrder(ops.linear(ops.activation(ops.linear(merged, fc1), 'gelu'), fc2));
}

/**
 * The tower on tfjs: `pixels` = the image processor's rows [Σ t·h·w, C·T·P·P] for `grids` (image 0 first) →
 * image features [Σ t·h·w / merge², out_hidden].
 */
export function qwen25VisionForward(
  weights: Qwen25VisionWeights,
  config: Qwen25VisionConfig,
  pixels: Float32Array,
  grids: readonly GridThw[],
): tf.Tensor2D {
  const width = config.inChannels * config.temporalPatchSize * config.patchSize ** 2;
  const layout = qwen25VisionLayout(grids, config);
  return runTfjsTower(pixels, width, layout, (ops) => qwen25VisionTower(ops, weights, config));
}
