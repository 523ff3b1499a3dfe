// Gemma 3's multi-modal projector (Gemma3MultiModalProjector): average-pool the SigLIP patch grid down to
// mm_tokens_per_image tokens (row-major), RMS-normalise them with Gemma's (1 + w) gain (eps = the vision config's
// layer_norm_eps), and project to the text hidden size with x @ W, W stored [vision hidden, text hidden] (not
// nn.Linear's [out, in]).
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../core/errors.ts';
import type { TensorLookup } from '../vision/siglip.ts';

export interface Gemma3ProjectorWeights {
  /** mm_soft_emb_norm.weight, stored around 0: the gain is (1 + w) */
  norm: tf.Tensor1D;
  /** mm_input_projection_weight: [vision hidden, text hidden] */
  projection: tf.Tensor2D;
}

/** On-disk prefix: the legacy `multi_modal_projector.` that transformers 4.57 writes; v5 files say `model.multi_modal_projector.`. */
export const GEMMA3_PROJECTOR_PREFIX = 'multi_modal_projector.';

export function loadGemma3Projector(
  get: TensorLookup,
  visionHidden: number,
  textHidden: number,
  source = 'model.safetensors',
  prefix = GEMMA3_PROJECTOR_PREFIX,
): Gemma3ProjectorWeights {
  const take = (name: string, shape: number[]) => {
    const full = prefix + name;
    const t = get(full);
    if (!t) throw new UserError(`${source}: tensor ${full} is missing`);
    if (t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
      throw new UserError(`${source}: tensor ${full} has shape [${t.shape}], config.json implies [${shape}]`);
    }
    return t.data;
  };
  return {
    norm: tf.tensor1d(take('mm_soft_emb_norm.weight', [visionHidden])),
    projection: tf.tensor2d(take('mm_input_projection_weight', [visionHidden, textHidden]), [visionHidden, textHidden]),
  };
}

/** Gemma RMSNorm over the last axis: x · rsqrt(mean(x²) + eps) · (1 + w). x: [rows, D]. */
function gemmaRmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), tf.add(weight, 1));
}

/** SigLIP output [N, n², D] -> image features [N, mmTokensPerImage, text hidden]. */
export function gemma3Project(
  weights: Gemma3ProjectorWeights,
  visionOut: tf.Tensor3D,
  mmTokensPerImage: number,
  eps: number,
): tf.Tensor3D {
  const [N, seq, D] = visionOut.shape;
  const n = Math.round(Math.sqrt(seq));
  const t = Math.round(Math.sqrt(mmTokensPerImage));
  if (n * n !== seq || t * t !== mmTokensPerImage || n % t !== 0)
    throw new Error(`gemma3Project: cannot pool ${seq} patches to ${mmTokensPerImage} tokens`);
  const k = n / t; // AvgPool2d kernel = stride
  return tf.tidy(() => {
    // Pool rows, then columns, each a mean over one axis: [N·t, k, t, k·D] -> [N·t, t, k·D] -> [N·t·t, k, D] -> [N·t·t, D].
    const rows = tf.mean(tf.reshape(visionOut, [N * t, k, t, k * D]), 1);
    const pooled = tf.mean(tf.reshape(rows, [N * t * t, k, D]), 1) as tf.Tensor2D; // row-major over the t×t grid
    const normed = gemmaRmsNorm(pooled, weights.norm, eps);
    return tf.reshape(tf.matMul(normed, weights.projection), [N, mmTokensPerImage, weights.projection.shape[1]]);
  });
}
