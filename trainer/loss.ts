// The GRPO objective for one micro-batch of completions, as a tfjs scalar to differentiate:
//   per token t of completion i:  −[ min(ρ·A_i, clip(ρ, 1−ε, 1+ε)·A_i) − β·KL_k3 ],   ρ = exp(logp − logp_old)
//   KL_k3 = exp(ref − logp) − (ref − logp) − 1     (Schulman's k3 estimator; ref = the policy with LoRA off)
// normalised either GRPO-style (mean over each completion's tokens, then over completions) or Dr. GRPO-style (sum
// over all tokens / (completions × max completion tokens)). The divisor counts the completions of the whole
// optimiser step, not of the micro-batch, so summing micro-batch gradients gives exactly the full-batch gradient.
import * as tf from '@tensorflow/tfjs';

export type LossType = 'grpo' | 'dr-grpo';

export interface LossInputs {
  /** [B, T] log-probabilities of the completion tokens under the current policy (differentiable). */
  logProbs: tf.Tensor2D;
  /** [B, T] the same under the policy that sampled them (constant). */
  oldLogProbs: tf.Tensor2D;
  /** [B, T] under the reference policy (constant); null when β = 0. */
  refLogProbs: tf.Tensor2D | null;
  /** [B, T] 1 for completion tokens, 0 for padding. */
  mask: tf.Tensor2D;
  /** [B] advantage of each completion. */
  advantages: tf.Tensor1D;
}

export interface LossOptions {
  epsilon: number;
  beta: number;
  lossType: LossType;
  maxCompletionTokens: number;
  /** Completions in the whole optimiser step (over all micro-batches). */
  totalSequences: number;
}

/** Sums over the micro-batch's real tokens, for logging (divide by `tokens`). */
export interface LossSums {
  tokens: tf.Scalar;
  kl: tf.Scalar;
  clipped: tf.Scalar;
  ratio: tf.Scalar;
}

export interface LossOutput {
  loss: tf.Scalar;
  sums: LossSums;
}

export function grpoLoss(inputs: LossInputs, options: LossOptions): LossOutput {
  const { logProbs, oldLogProbs, refLogProbs, mask, advantages } = inputs;
  const { epsilon, beta } = options;
  const adv = advantages.expandDims(1) as tf.Tensor2D; // [B, 1]
  const ratio = tf.exp(tf.sub(logProbs, oldLogProbs));
  const unclipped = tf.mul(ratio, adv);
  const clipped = tf.mul(tf.clipByValue(ratio, 1 - epsilon, 1 + epsilon), adv);
  let perToken: tf.Tensor2D = tf.neg(tf.minimum(unclipped, clipped));
  let kl: tf.Tensor2D = tf.zerosLike(logProbs);
  if (refLogProbs !== null && beta > 0) {
    const delta = tf.sub(refLogProbs, logProbs);
    kl = tf.sub(tf.sub(tf.exp(delta), delta), 1);
    perToken = tf.add(perToken, tf.mul(beta, kl));
  }
  const masked = tf.mul(perToken, mask);
  let loss: tf.Scalar;
  if (options.lossType === 'grpo') {
    const lengths = tf.maximum(tf.sum(mask, 1), 1);
    loss = tf.div(tf.sum(tf.div(tf.sum(masked, 1), lengths)), options.totalSequences);
  } else {
    loss = tf.div(tf.sum(masked), options.totalSequences * options.maxCompletionTokens);
  }
  // A token counts as clipped when the clipped branch is the one the min selects and it differs from the unclipped.
  const isClipped = tf.logicalOr(
    tf.logicalAnd(tf.less(ratio, 1 - epsilon), tf.less(adv, 0)),
    tf.logicalAnd(tf.greater(ratio, 1 + epsilon), tf.greater(adv, 0)),
  );
  const sums: LossSums = {
    tokens: tf.sum(mask),
    kl: tf.sum(tf.mul(kl, mask)),
    clipped: tf.sum(tf.mul(tf.cast(isClipped, 'float32'), mask)),
    ratio: tf.sum(tf.mul(ratio, mask)),
  };
  return { loss, sums };
}

/**
 * Scale gradients so that their global L2 norm is at most `maxNorm` (0 = no clipping). Returns the norm before
 * clipping. Disposes the gradients it replaces.
 */
export function clipGradientsByGlobalNorm(grads: tf.NamedTensorMap, maxNorm: number): { grads: tf.NamedTensorMap; norm: number } {
  const names = Object.keys(grads);
  const norm = tf.tidy(() => Math.sqrt(names.reduce((s, n) => s + tf.sum(tf.square(grads[n])).dataSync()[0], 0)));
  if (maxNorm <= 0 || !(norm > maxNorm)) return { grads, norm };
  const scale = maxNorm / (norm + 1e-6);
  const out: tf.NamedTensorMap = {};
  for (const n of names) {
    out[n] = tf.mul(grads[n], scale);
    grads[n].dispose();
  }
  return { grads: out, norm };
}
