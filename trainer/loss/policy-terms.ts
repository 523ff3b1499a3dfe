// The per-token policy terms of TRL 1.9's newer loss types, before any mask or normaliser; loss.ts
// composes them with the masks, the KL and the normalisers. ρ is the importance ratio at the configured level ([B, T]
// per token, [B, 1] per sequence), A_i the advantage, logp_it the current log-probability, d_it = logp_it − logp_old_it.
// Formulas from TRL's GRPOTrainer._compute_loss and get_gamma_weights (huggingface/trl main, v1.9.0):
//
//   two-sided clip (delta, INTELLECT-2)  ℓ_it = −min(min(ρ, δ)·A_i, clip(ρ, 1 − ε_low, 1 + ε_high)·A_i)
//       The cap δ binds only where A < 0 (for A > 0 the clipped branch is already the smaller); loss.ts applies it.
//   cispo (MiniMax-M1)                   ℓ_it = −sg[min(ρ_it, ε_max)]·A_i·logp_it         ε_max = epsilon_high
//       The weight is clipped and detached (sg = stop-gradient), so every token keeps a gradient sg[w]·A·∇logp.
//       No lower bound. TRL's code takes ε_max = epsilon_high, which defaults to ε (0.2): with that default every ratio
//       near 1 is clipped to 0.2; the docstring recommends 5 (ScaleRL).
//   sapo (Soft Adaptive PO)              ℓ_it = −σ(τ_i·(ρ − 1))·(4/τ_i)·A_i              τ_i = τ_pos if A_i > 0 else τ_neg
//       A sigmoid gate in place of the hard clip: its gradient 4σ(1 − σ)·A·∇ρ is A·∇ρ at ρ = 1 and fades off-policy.
//   vespo (Variational Sequence-level Soft PO)
//       log w_i = clamp(Σ_t m_it·clamp(d_it, −20, 20), ln 1e-8, 20)                      (a sum, not a mean)
//       (k, λ) = (k_pos, λ_pos) if A_i ≥ 0 else (k_neg, λ_neg), λ ≥ 1e-4
//       φ_i = exp(λ + k·log w_i − λ·w_i)   (= e^λ·w^k·e^{−λw}, φ(1) = 1; non-finite → 0), detached
//       ℓ_it = −φ_i·A_i·logp_it
// luspo is the clipped term (with δ when set) at sequence level; only its normaliser differs (loss.ts).
import * as tf from '@tensorflow/tfjs';

/**
 * sg[x]: x's value with no gradient (torch's .detach()): a copy of its values, a fresh tensor the gradient tape does
 * not connect to anything (tfjs has no stop-gradient op, and a customGrad with a zero gradient would leave the ops
 * computed from it on the tape, some of which, like logicalOr, have no gradient function at all).
 */
function stopGradient<T extends tf.Tensor>(x: T): T {
  return tf.tensor(x.dataSync(), x.shape, x.dtype) as T;
}

/** cispo: −sg[min(ρ, ε_max)]·A·logp, [B, T]. */
export function cispoTerm(
  ratio: tf.Tensor2D,
  adv: tf.Tensor2D,
  logProbs: tf.Tensor2D,
  epsilonMax: number,
): tf.Tensor2D {
  const weight = stopGradient(tf.minimum(ratio, epsilonMax));
  return tf.neg(tf.mul(tf.mul(weight, adv), logProbs));
}

/** sapo: −σ(τ(ρ − 1))·(4/τ)·A with τ by the sign of A; [B, T] or [B, 1]. */
export function sapoTerm(
  ratio: tf.Tensor2D,
  adv: tf.Tensor2D,
  temperaturePos: number,
  temperatureNeg: number,
): tf.Tensor2D {
  const tau = tf.where(tf.greater(adv, 0), tf.fill(adv.shape, temperaturePos), tf.fill(adv.shape, temperatureNeg)); // [B, 1]
  const gate = tf.div(tf.mul(tf.sigmoid(tf.mul(tau, tf.sub(ratio, 1))), 4), tau);
  return tf.neg(tf.mul(gate, adv));
}

export interface VespoOptions {
  kPos: number;
  lambdaPos: number;
  kNeg: number;
  lambdaNeg: number;
}

/** vespo's φ_i, [B, 1], detached: the Gamma weight of each completion's sequence-level ratio w_i. */
export function vespoWeights(
  logProbs: tf.Tensor2D,
  oldLogProbs: tf.Tensor2D,
  mask: tf.Tensor2D,
  adv: tf.Tensor2D,
  o: VespoOptions,
): tf.Tensor2D {
  const lower = Math.log(1e-8);
  const d = tf.clipByValue(tf.sub(stopGradient(logProbs), oldLogProbs), -20, 20);
  const logW = tf.clipByValue(tf.sum(tf.mul(d, mask), 1, true), lower, 20); // [B, 1]
  const w = tf.exp(logW);
  const nonNeg = tf.greaterEqual(adv, 0);
  const k = tf.where(nonNeg, tf.fill(adv.shape, o.kPos), tf.fill(adv.shape, o.kNeg));
  const lambda = tf.maximum(tf.where(nonNeg, tf.fill(adv.shape, o.lambdaPos), tf.fill(adv.shape, o.lambdaNeg)), 1e-4);
  const phi = tf.exp(tf.sub(tf.add(lambda, tf.mul(k, logW)), tf.mul(lambda, w)));
  const finite = tf.logicalNot(tf.logicalOr(tf.isNaN(phi), tf.isInf(phi)));
  return tf.where(finite, phi, tf.zerosLike(phi)) as tf.Tensor2D;
}

/** vespo: −φ_i·A_i·logp_it, [B, T]. */
export function vespoTerm(phi: tf.Tensor2D, adv: tf.Tensor2D, logProbs: tf.Tensor2D): tf.Tensor2D {
  return tf.neg(tf.mul(tf.mul(phi, adv), logProbs));
}

/**
 * DeepSeek-V3.2's off-policy sequence mask, [B, 1] constant: keep completion i when A_i ≥ 0 or its mean log-ratio of
 * the sampling policy to the current one, Σ_t m_it (logp_old_it − sg[logp_it]) / max(1, Σ_t m_it), is at most δ.
 */
export function offPolicyMask(
  logProbs: tf.Tensor2D,
  oldLogProbs: tf.Tensor2D,
  mask: tf.Tensor2D,
  adv: tf.Tensor2D,
  threshold: number,
): tf.Tensor2D {
  const kl = tf.div(
    tf.sum(tf.mul(tf.sub(oldLogProbs, stopGradient(logProbs)), mask), 1, true),
    tf.maximum(tf.sum(mask, 1, true), 1),
  ); // [B, 1]
  return tf.cast(tf.logicalOr(tf.greaterEqual(adv, 0), tf.lessEqual(kl, threshold)), 'float32') as tf.Tensor2D;
}
