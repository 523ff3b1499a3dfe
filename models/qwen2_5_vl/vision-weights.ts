// The weights of Qwen2.5-VL's vision tower (Qwen2_5_VisionTransformerPretrainedModel), read under either on-disk
// prefix (models/qwen-vl/vision-weights.ts: `visual.*` in the Hub's and the fixture's files):
//   patch_embed.proj.weight                 [D, C, T, P, P]  Conv3d, no bias
//   blocks.{i}.norm1.weight, norm2.weight   [D]              RMSNorm (eps 1e-6)
//   blocks.{i}.attn.qkv.{weight,bias}       [3D, D], [3D]    q, k, v stacked
//   blocks.{i}.attn.proj.{weight,bias}      [D, D], [D]
//   blocks.{i}.mlp.{gate,up}_proj.{weight,bias} [I, D], [I];  mlp.down_proj [D, I], [D]
//   merger.ln_q.weight                      [D]              RMSNorm before the 2×2 merge
//   merger.mlp.0.{weight,bias}              [4D, 4D];  merger.mlp.2.{weight,bias} [out, 4D]
import type { TensorLookup } from '../vision/siglip.ts';
import type { QwenLinear } from '../qwen-vl/vision-ops.ts';
import { visionPrefix, weightReader } from '../qwen-vl/vision-weights.ts';
import type { Qwen25VisionConfig } from './config.ts';
import type * as tf from '@tensorflow/tfjs';

interface Qwen25Block {
  norm1: tf.Tensor1D;
  qkv: QwenLinear;
  proj: QwenLinear;
  norm2: tf.Tensor1D;
  gate: QwenLinear;
  up: QwenLinear;
  down: QwenLinear;
}

export interface Qwen25VisionWeights {
  /** The Conv3d kernel as [C·T·P·P, D]. */
  patch: QwenLinear;
  blocks: Qwen25Block[];
  merger: { lnQ: tf.Tensor1D; fc1: QwenLinear; fc2: QwenLinear };
}

/** Read the tower (every shape checked against the config); `source` names the checkpoint file in errors. */
export function loadQwen25VisionWeights(
  get: TensorLookup,
  config: Qwen25VisionConfig,
  source = 'model.safetensors',
): Qwen25VisionWeights {
  const r = weightReader(get, visionPrefix(get, source), source);
  const { hiddenSize: D, intermediateSize: I, spatialMergeSize: m } = config;
  const merged = D * m * m;
  const blocks: Qwen25Block[] = [];
  for (let i = 0; i < config.depth; i++) {
    const p = `blocks.${i}.`;
    blocks.push({
      norm1: r.vector(`${p}norm1.weight`, D),
      qkv: r.linear(`${p}attn.qkv`, D, 3 * D),
      proj: r.linear(`${p}attn.proj`, D, D),
      norm2: r.vector(`${p}norm2.weight`, D),
      gate: r.linear(`${p}mlp.gate_proj`, D, I),
      up: r.linear(`${p}mlp.up_proj`, D, I),
      down: r.linear(`${p}mlp.down_proj`, I, D),
    });
  }
  return {
    patch: r.patchKernel(D, config.inChannels, config.temporalPatchSize, config.patchSize, false),
    blocks,
    merger: {
      lnQ: r.vector('merger.ln_q.weight', D),
      fc1: r.linear('merger.mlp.0', merged, merged),
      fc2: r.linear('merger.mlp.2', merged, config.outHiddenSize),
    },
  };
}
