// Qwen3-VL's vision tower (Qwen3VLVisionModel), written once over the Qwen-VL vision ops
// (models/qwen-vl/vision-ops.ts) and run by tfjs (qwen3VisionForward here) and ONNX Runtime
// (models/onnx/hf/qwen-vl-vision-graph.ts):
//
//   pixel rows [N, C·T·P·P] @ W_patch + b                   (Conv3d with kernel = stride = (T, P, P))
//   + the learned position table interpolated to each image (position-interpolation.ts)
//   × depth:  h += proj(attn(LN1(h)))                      (2-D rotary, attention within each image)
//             h += fc2(act(fc1(LN2(h))))                   (gelu_pytorch_tanh in the released configs)
//             after block deepstack_visual_indexes[j]: deepstack[j] = fc2(GELU(fc1(LN([N/4, 4D] merge of h))))
//   merger:   LN(h) → [N/4, 4D] → fc1 → GELU (erf) → fc2 → [N/4, out_hidden]
//
// Rows stay in the image processor's order throughout (no windows), which is image order: image 0's merged tokens
// first. The decoder adds deepstack[j] to its hidden states at the image-token positions after its layer j.
import type * as tf from '@tensorflow/tfjs';
import { checkImageGrids, type GridThw } from '../qwen-vl/grid.ts';
import { runTfjsTower } from '../qwen-vl/tfjs-vision-ops.ts';
import { imageSegments, rotaryTables, type VisionLayout } from '../qwen-vl/vision-layout.ts';
import { type QwenVisionOps, visionAttention } from '../qwen-vl/vision-ops.ts';
import type { Qwen3VisionConfig } from './config.ts';
import { positionTaps } from './position-interpolation.ts';
import type { Qwen3Merger, Qwen3VisionWeights } from './vision-weights.ts';

/** LayerNorm epsilon of every norm in the tower (fixed in the modeling code, not a config key). */
const EPS = 1e-6;

/** What the tower returns: the image features and one DeepStack feature set per deepstack_visual_indexes entry. */
export type Qwen3VisionOutput<T> = {
  /** [N / merge², out_hidden], image order. */
  features: T;
  /** Each [N / merge², out_hidden], in deepstack_visual_indexes order. */
  deepstack: T[];
};

/** The host-side description of one call (models/qwen-vl/vision-layout.ts): segments, rotary angles, position taps. */
export function qwen3VisionLayout(grids: readonly GridThw[], config: Qwen3VisionConfig): VisionLayout {
  const m = config.spatialMergeSize;
  checkImageGrids(grids, m);
  const headDim = config.hiddenSize / config.numHeads;
  const rows = grids.reduce((n, [t, h, w]) => n + t * h * w, 0);
  return {
    grids,
    rows,
    headDim,
    order: null,
    restore: null,
    ...rotaryTables(grids, m, headDim, null),
    segments: { image: imageSegments(grids), window: null },
    positionTaps: positionTaps(grids, config.numPositionEmbeddings, m),
  };
}

/** A patch merger; `postShuffle` (DeepStack): the norm runs over the merged [N/4, 4D] rows instead of before. */
function merge<T>(ops: QwenVisionOps<T>, h: T, w: Qwen3Merger, unit: number, width: number, postShuffle: boolean): T {
  const x = postShuffle
    ? ops.layerNorm(ops.mergeUnits(h, unit, width), w.norm, EPS)
    : ops.mergeUnits(ops.layerNorm(h, w.norm, EPS), unit, width);
  return ops.linear(ops.activation(ops.linear(x, w.fc1), 'gelu'), w.fc2);
}

/** The tower's definition (see the header). */
export function qwen3VisionTower<T>(
  ops: QwenVisionOps<T>,
  weights: Qwen3VisionWeights,
  config: Qwen3VisionConfig,
): Qwen3VisionOutput<T> {
  const D = config.hiddenSize;
  const unit = config.spatialMergeSize ** 2;
  let h = ops.add(ops.patchEmbed(weights.patch), ops.positionEmbedding(weights.position));
  const deepstack: T[] = [];
  weights.blocks.forEach((block, i) => {
    h = ops.layer(h, (x) => {
      const a = ops.add(
        x,
        visionAttention(ops, ops.layerNorm(x, block.norm1, EPS), block, D, config.numHeads, 'image'),
      );
      const mlp = ops.linear(
        ops.activation(ops.linear(ops.layerNorm(a, block.norm2, EPS), block.fc1), config.hiddenAct),
        block.fc2,
      );
      return ops.add(a, mlp);
    });
    const j = config.deepstackVisualIndexes.indexOf(i);
    if (j >= 0) deepstack[j] = merge(ops, h, weights.deepstack[j], unit, D, true);
  });
  return { features: merge(ops, h, weights.merger, unit, D, false), deepstack };
}

/**
 * The tower on tfjs: `pixels` = the image processor's rows [Σ t·h·w, C·T·P·P] for `grids` (image 0 first) → image
 * features and DeepStack features, each [Σ t·h·w / merge², out_hidden].
 */
export function qwen3VisionForward(
  weights: Qwen3VisionWeights,
  config: Qwen3VisionConfig,
  pixels: Float32Array,
  grids: readonly GridThw[],
): Qwen3VisionOutput<tf.Tensor2D> {
  const width = config.inChannels * config.temporalPatchSize * config.patchSize ** 2;
  const layout = qwen3VisionLayout(grids, config);
  return runTfjsTower(pixels, width, layout, (ops) => qwen3VisionTower(ops, weights, config));
}
