// The Idefics3 (SmolVLM) connector between the vision tower and the text model: a pixel shuffle that trades patches
// for width (each s×s block of patches becomes one token s² times as wide), then `modality_projection`, a Linear
// without bias to the text hidden size.
//
// Pixel shuffle mapping (what transformers' Idefics3Connector.pixel_shuffle computes): on an n×n patch grid, output
// token (R, C) of the (n/s)×(n/s) grid is the concatenation of patches (R·s + i, C·s + j) for i = 0..s-1 (outer) and
// j = 0..s-1 (inner), each D wide. Done column-major instead, the fixture's logits move by 10.6.
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../core/errors.ts';
import type { TensorLookup } from '../vision/siglip.ts';

export interface Idefics3ConnectorWeights {
  /** modality_projection.proj.weight transposed: [D·s², text hidden] */
  projection: tf.Tensor2D;
}

export const IDEFICS3_CONNECTOR_WEIGHT = 'model.connector.modality_projection.proj.weight';

/** Read the projection ([text hidden, D·s²] on disk, nn.Linear layout), checking its input width. */
export function loadIdefics3Connector(
  get: TensorLookup,
  visionHidden: number,
  scaleFactor: number,
  textHidden: number,
  source = 'model.safetensors',
): Idefics3ConnectorWeights {
  const t = get(IDEFICS3_CONNECTOR_WEIGHT);
  if (!t) throw new UserError(`${source}: tensor ${IDEFICS3_CONNECTOR_WEIGHT} is missing`);
  const inDim = visionHidden * scaleFactor * scaleFactor;
  if (t.shape.length !== 2 || t.shape[0] !== textHidden || t.shape[1] !== inDim) {
    throw new UserError(
      `${source}: tensor ${IDEFICS3_CONNECTOR_WEIGHT} has shape [${t.shape}], config.json implies [${textHidden},${inDim}]`,
    );
  }
  const out = new Float32Array(inDim * textHidden);
  for (let r = 0; r < textHidden; r++) for (let c = 0; c < inDim; c++) out[c * textHidden + r] = t.data[r * inDim + c];
  return { projection: tf.tensor2d(out, [inDim, textHidden]) };
}

/** [N, n², D] -> [N, (n/s)², D·s²] (mapping in the header). Rank-4 reshapes and one transpose. */
export function pixelShuffle(x: tf.Tensor3D, s: number): tf.Tensor3D {
  const [N, seq, D] = x.shape;
  const n = Math.round(Math.sqrt(seq));
  if (n * n !== seq || n % s !== 0)
    throw new Error(`pixelShuffle: ${seq} patches are not a square grid divisible by ${s}`);
  const m = n / s;
  return tf.tidy(() => {
    const a = tf.reshape(x, [N * m, s, m, s * D]); // [N·R, i, C, (j, d)]: patch (R·s+i, C·s+j)
    const b = tf.transpose(a, [0, 2, 1, 3]); // [N·R, C, i, (j, d)]
    return tf.reshape(b, [N, m * m, s * s * D]); // token (R, C) = patches (i-major, j-minor)
  });
}

/** Vision tower output [N, n², D] -> image hidden states [N, (n/s)², text hidden]. */
export function idefics3Connect(
  weights: Idefics3ConnectorWeights,
  visionOut: tf.Tensor3D,
  scaleFactor: number,
): tf.Tensor3D {
  return tf.tidy(() => {
    const shuffled = pixelShuffle(visionOut, scaleFactor);
    const [N, T, W] = shuffled.shape;
    const projected = tf.matMul(tf.reshape(shuffled, [N * T, W]), weights.projection); // [N·T, text hidden]
    return tf.reshape(projected, [N, T, weights.projection.shape[1]]);
  });
}
