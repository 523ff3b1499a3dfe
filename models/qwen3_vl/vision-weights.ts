// The weights of Qwen3-VL's vision tower (Qwen3VLVisionModel), read under either on-disk prefix
// (models/qwen-vl/vision-weights.ts: `model.visual.*` in the Hub's and the fixture's files):
//   patch_embed.proj.{weight,bias}          [D, C, T, P, P], [D]   Conv3d with bias
//   pos_embed.weight                        [n², D]                learned position table
//   blocks.{i}.norm1, norm2 .{weight,bias}  [D]                    LayerNorm (eps 1e-6)
//   blocks.{i}.attn.qkv.{weight,bias}       [3D, D];  attn.proj [D, D]
//   blocks.{i}.mlp.linear_fc1 [I, D];  mlp.linear_fc2 [D, I]       (with biases)
//   merger.norm [D];  merger.linear_fc1 [4D, 4D];  merger.linear_fc2 [out, 4D]
//   deepstack_merger_list.{j}.norm [4D] (after the merge);  .linear_fc1 [4D, 4D];  .linear_fc2 [out, 4D]
import type * as tf from '@tensorflow/tfjs';
import type { TensorLookup } from '../vision/siglip.ts';
import type { QwenLayerNorm, QwenLinear } from '../qwen-vl/vision-ops.ts';
import { visionPrefix, weightReader } from '../qwen-vl/vision-weights.ts';
import type { Qwen3VisionConfig } from './config.ts';

interface Qwen3Block {
  norm1: QwenLayerNorm;
  qkv: QwenLinear;
  proj: QwenLinear;
  norm2: QwenLayerNorm;
  fc1: QwenLinear;
  fc2: QwenLinear;
}

/** A patch merger: the norm (over D before the 2×2 merge, or over 4D after it for DeepStack), then the MLP. */
export interface Qwen3Merger {
  norm: QwenLayerNorm;
  fc1: QwenLinear;
  fc2: QwenLinear;
}

export interface Qwen3VisionWeights {
  /** The Conv3d kernel as [C·T·P·P, D] and its bias. */
  patch: QwenLinear;
  /** [num_position_embeddings, D] */
  position: tf.Tensor2D;
  blocks: Qwen3Block[];
  merger: Qwen3Merger;
  /** One per deepstack_visual_indexes entry. */
  deepstack: Qwen3Merger[];
}

/** Read the tower (every shape checked against the config); `source` names the checkpoint file in errors. */
export function loadQwen3VisionWeights(
  get: TensorLookup,
  config: Qwen3VisionConfig,
  source = 'model.safetensors',
): Qwen3VisionWeights {
  const r = weightReader(get, visionPrefix(get, source), source);
  const { hiddenSize: D, intermediateSize: I, spatialMergeSize: m, outHiddenSize: out } = config;
  const merged = D * m * m;
  const merger = (p: string, normWidth: number): Qwen3Merger => ({
    norm: r.layerNorm(`${p}norm`, normWidth),
    fc1: r.linear(`${p}linear_fc1`, merged, merged),
    fc2: r.linear(`${p}linear_fc2`, merged, out),
  });
  const blocks: Qwen3Block[] = [];
  for (let i = 0; i < config.depth; i++) {
    const p = `blocks.${i}.`;
    blocks.push({
      norm1: r.layerNorm(`${p}norm1`, D),
      qkv: r.linear(`${p}attn.qkv`, D, 3 * D),
      proj: r.linear(`${p}attn.proj`, D, D),
      norm2: r.layerNorm(`${p}norm2`, D),
      fc1: r.linear(`${p}mlp.linear_fc1`, D, I),
      fc2: r.linear(`${p}mlp.linear_fc2`, I, D),
    });
  }
  return {
    patch: r.patchKernel(D, config.inChannels, config.temporalPatchSize, config.patchSize, true),
    position: r.matrix('pos_embed.weight', config.numPositionEmbeddings, D),
    blocks,
    merger: merger('merger.', D),
    deepstack: config.deepstackVisualIndexes.map((_, j) => merger(`deepstack_merger_list.${j}.`, merged)),
  };
}
