// The loss side of both ORT learners: a chunk's loss value and g = dLoss/dlogp,
// computed in tfjs from the log-probs (and entropies) ORT's forward gave, with the caller's own loss function. The
// loss depends on the adapters only through the log-probs, so ORT's gradient of Σ g · logp is dLoss/dθ
// (models/onnx/builtin/builtin-learner.ts, hf/hf-learner.ts). Entropies enter as constants: the losses use them as masks.
import * as tf from '@tensorflow/tfjs';
import type { LogProbLoss } from '../learner.ts';
import type { TokenLogProbs, TokenLogProbsOptions } from '../types.ts';

/** One chunk's per-token values, [B, L] row-major. */
export interface ChunkLogProbs {
  logp: Float32Array;
  entropy: Float32Array;
  mask: Float32Array;
}

/** The loss of a [B, L] chunk and its gradient with respect to the log-probs ([B·L]). */
export function logpLossAndGradient(
  values: ChunkLogProbs,
  shape: { B: number; L: number },
  options: TokenLogProbsOptions,
  loss: LogProbLoss,
): { value: tf.Scalar; g: Float32Array } {
  const { B, L } = shape;
  const lp: TokenLogProbs = {
    logProbs: tf.tensor2d(values.logp, [B, L]),
    mask: tf.tensor2d(values.mask, [B, L]),
    ...(options.withEntropy ? { entropy: tf.tensor2d(values.entropy, [B, L]) } : {}),
  };
  const { value, grad } = tf.valueAndGrad((logProbs: tf.Tensor) => loss({ ...lp, logProbs: logProbs as tf.Tensor2D }))(
    lp.logProbs,
  );
  const g = grad.dataSync() as Float32Array;
  tf.dispose([grad, lp.logProbs, lp.mask, ...(lp.entropy ? [lp.entropy] : [])]);
  return { value, g };
}
