// The GRPO family's objective for one micro-batch of completions, as a tfjs scalar to differentiate.
// Per token t of completion i, with advantage A_i:
//   ρ_it = exp(logp_it − logp_old_it)                                   importanceSamplingLevel 'token' (GRPO)
//   ρ_i  = exp( Σ_t m_it (logp_it − logp_old_it) / max(1, Σ_t m_it) )   'sequence' (GSPO): one ratio per completion,
//                                                                       applied to every one of its tokens
//   ℓ_it = −min(ρ·A_i, clip(ρ, 1 − ε_low, 1 + ε_high)·A_i) · h_it + β·KL_it
//   KL_it = exp(ref − logp) − (ref − logp) − 1   (Schulman's k3 estimator; ref = the policy with LoRA off)
// where m_it is the loss mask (padding 0; with maskTruncatedCompletions, every token of a completion that hit the
// token limit 0) and h_it is the high-entropy mask (1 everywhere unless topEntropyQuantile < 1; the KL is not masked).
// The loss types of mid-2025 (grpo, bnpo, dr_grpo, dapo) differ only in how Σ m·ℓ is normalised; each normaliser is
// written next to its formula in `normalise`. TRL 1.9's newer ones replace the clipped term (cispo, sapo, vespo; their
// terms in policy-terms.ts) or only the normaliser (luspo), and four options modify them:
//   delta (two-sided clip, clipped loss types only): ρ in the unclipped branch capped at δ;
//   offPolicyMaskThreshold: the policy term times DeepSeek-V3.2's sequence mask o_i (policy-terms.ts), KL untouched;
//   useBiasCorrectionKl: KL_it times ρ (with its gradient; ρ per sequence at sequence level), as TRL's code does;
//   entropyCoef c: L − c·H̄, H̄ = Σ_i Σ_t m_it h_it H_it / max(1, T_step), the step's mean per-token entropy (TRL adds the
//     same bonus whatever the loss type), with the gradient of H (the learner must differentiate the entropy).
// Every divisor counts the whole optimiser step, not the micro-batch, so summing micro-batch gradients gives exactly
// the full-batch gradient whatever the learner's memory chunking (the exception is TRL's per-micro-batch entropy
// quantile, when the caller does not pass a step-wide threshold).
// Names follow TRL's GRPOConfig (loss_type, importance_sampling_level, epsilon_high, mask_truncated_completions,
// top_entropy_quantile), and so do the clip statistics (clip_ratio/low_mean, /high_mean, /region_mean).
import * as tf from '@tensorflow/tfjs';
import { entropyThreshold } from './entropy-mask.ts';
import { cispoTerm, offPolicyMask, sapoTerm, vespoTerm, vespoWeights, type VespoOptions } from './policy-terms.ts';

export const LOSS_TYPES = ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'luspo', 'vespo'] as const;
export type LossType = (typeof LOSS_TYPES)[number];

export const IMPORTANCE_SAMPLING_LEVELS = ['token', 'sequence'] as const;
type ImportanceSamplingLevel = (typeof IMPORTANCE_SAMPLING_LEVELS)[number];

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
  /** [B] Completion.finished of each row (false: it hit the token limit). Required with maskTruncatedCompletions. */
  finished?: readonly boolean[];
  /**
   * [B, T] per-token entropy of the policy. Required with topEntropyQuantile < 1 and no threshold (used as a constant
   * mask), and with entropyCoef ≠ 0 (differentiated: the bonus's gradient flows through it).
   */
  entropies?: tf.Tensor2D;
  /**
   * [B] bnpo only: the active tokens (after truncation masking) of the local batch each row belongs to. A local batch
   * is one gradient-accumulation batch (`promptsPerStep` prompts × `groupSize` completions); see stepNormalisers.
   */
  localBatchTokens?: ArrayLike<number>;
  /**
   * [B, T] or [B, 1] (constant): TRL's vllm importance-sampling weights of rollouts sampled on a server
   * (rollout-correction.ts), multiplying the policy-gradient term only (not the KL). Absent: 1.
   */
  importanceWeights?: tf.Tensor2D;
}

export interface LossOptions {
  /** ε_low: the ratio is clipped from below at 1 − ε. */
  epsilon: number;
  /** ε_high: clipped from above at 1 + ε_high (DAPO's clip-higher). Default: ε. */
  epsilonHigh?: number;
  beta: number;
  lossType: LossType;
  /** Default 'token'. */
  importanceSamplingLevel?: ImportanceSamplingLevel;
  /** dr_grpo: the constant L_max of its divisor. */
  maxCompletionTokens: number;
  /** grpo, dr_grpo: completions in the whole optimiser step (over all micro-batches). */
  totalSequences: number;
  /** dapo: active tokens (after truncation masking) in the whole optimiser step; TRL's num_items_in_batch. */
  totalTokens?: number;
  /** bnpo: local batches in the optimiser step (gradientAccumulation). Default 1. */
  localBatches?: number;
  /** Give the completions that hit the token limit (finished = false) no loss. Default off. */
  maskTruncatedCompletions?: boolean;
  /** ρ: only the top-ρ fraction of tokens by entropy carries the policy-gradient term. Default 1 (all tokens). */
  topEntropyQuantile?: number;
  /**
   * The entropy a token needs to carry the policy gradient when ρ < 1: the (1 − ρ) quantile of the step's entropies
   * (entropyThreshold in entropy-mask.ts). Omitted: the quantile of this micro-batch's own tokens, as TRL does.
   */
  entropyThreshold?: number;
  /** δ of the two-sided clip: the unclipped branch's ratio capped at δ (binds where A < 0). Unset: off. */
  delta?: number;
  /** sapo: the gate's temperatures for A > 0 and A ≤ 0. TRL: 1, 1.05. */
  sapoTemperaturePos?: number;
  sapoTemperatureNeg?: number;
  /** vespo: the Gamma weight's k and λ for A ≥ 0 and A < 0. TRL: k 2 / 3, λ 3 / 2. */
  vespo?: VespoOptions;
  /** DeepSeek-V3.2's off-policy mask: drop the policy term of A < 0 completions whose mean log-ratio old/current exceeds it. */
  offPolicyMaskThreshold?: number;
  /** KL_it times the importance ratio (DeepSeek-V3.2's unbiased KL estimate). Default off. */
  useBiasCorrectionKl?: boolean;
  /**
   * c of the entropy bonus L − c·H̄ for this pass (adaptive control: the value it applies). Unset: no bonus and H̄ not
   * computed; set (even to 0): H̄ computed and returned in sums.entropyBonus.
   */
  entropyCoef?: number;
}

/** The loss types whose term is PPO's clipped ratio (they log clip_ratio/*; delta applies to them). */
export const CLIPPED_LOSS_TYPES: readonly LossType[] = ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'luspo'];

const SAPO_DEFAULTS = { pos: 1, neg: 1.05 };
const VESPO_DEFAULTS: VespoOptions = { kPos: 2, lambdaPos: 3, kNeg: 3, lambdaNeg: 2 };

/**
 * Sums over the micro-batch, for logging: divide by `tokens` (or by `clipUnits` for the clip_ratio/* counts), after
 * adding up the micro-batches and passes of a step.
 */
export interface LossSums {
  /** Tokens that carry loss (the loss mask's sum). */
  tokens: tf.Scalar;
  /** Σ k3 KL over those tokens. */
  kl: tf.Scalar;
  /** Tokens whose clipped branch was the one taken (= clip_ratio/region over tokens). */
  clipped: tf.Scalar;
  /** Σ ratio over those tokens (a sequence's ratio counted once per token at sequence level). */
  ratio: tf.Scalar;
  /** TRL's clip_ratio/low_mean numerator: ratio < 1 − ε_low with A < 0 (tokens, or sequences at sequence level). */
  clipLow: tf.Scalar;
  /** clip_ratio/high_mean numerator: ratio > 1 + ε_high with A > 0. */
  clipHigh: tf.Scalar;
  /** clip_ratio/region_mean numerator: either of the two. */
  clipRegion: tf.Scalar;
  /** Their denominator: `tokens` at token level; the rows B at sequence level (TRL counts each sequence once). */
  clipUnits: tf.Scalar;
  /**
   * clip_ratio/low_min and /high_max: over the completions with tokens, the smallest share of low-clipped tokens and
   * the largest share of high-clipped ones (the flag itself at sequence level); +∞ / −∞ when no row has tokens.
   */
  clipLowMin: tf.Scalar;
  clipHighMax: tf.Scalar;
  /** cispo_clip_ratio's numerator over `tokens`: tokens with ρ > ε_max and A > 0. 0 for the other loss types. */
  cispoClipped: tf.Scalar;
  /** vespo/phi_seq_mean's numerator over `rows`: Σ_i φ_i. 0 for the other loss types. */
  phi: tf.Scalar;
  /** Rows (completions) in the micro-batch. */
  rows: tf.Scalar;
  /** The entropy bonus H̄'s share of this micro-batch, Σ m·H / max(1, T_step); 0 when entropyCoef is unset. */
  entropyBonus: tf.Scalar;
}

export interface LossOutput {
  loss: tf.Scalar;
  sums: LossSums;
}

export function grpoLoss(inputs: LossInputs, options: LossOptions): LossOutput {
  const { logProbs, oldLogProbs, refLogProbs, advantages } = inputs;
  const { epsilon, beta } = options;
  const epsilonHigh = options.epsilonHigh ?? epsilon;
  const level = options.importanceSamplingLevel ?? 'token';
  const mask = lossMask(inputs, options); // [B, T]
  const adv = advantages.expandDims(1) as tf.Tensor2D; // [B, 1]

  // ratio: [B, T] at token level, [B, 1] at sequence level (broadcast over the tokens below, as in TRL).
  let ratio: tf.Tensor2D;
  if (level === 'token') {
    ratio = tf.exp(tf.sub(logProbs, oldLogProbs));
  } else {
    const lengths = tf.maximum(tf.sum(mask, 1, true), 1); // [B, 1]
    const meanLogRatio: tf.Tensor2D = tf.div(tf.sum(tf.mul(tf.sub(logProbs, oldLogProbs), mask), 1, true), lengths); // [B, 1]
    ratio = tf.exp(meanLogRatio) as tf.Tensor2D;
  }
  const lossType = options.lossType;
  const clippedType = CLIPPED_LOSS_TYPES.includes(lossType);
  // The unclipped branch's ratio: capped at δ by the two-sided clip; the clip statistics count it after the cap, as TRL.
  const capped = clippedType && options.delta !== undefined ? tf.minimum(ratio, options.delta) : ratio;
  let perToken: tf.Tensor2D; // [B, T] or [B, 1]
  let phi: tf.Tensor2D | null = null;
  if (clippedType) {
    const unclipped = tf.mul(capped, adv);
    const clipped = tf.mul(tf.clipByValue(ratio, 1 - epsilon, 1 + epsilonHigh), adv);
    perToken = tf.neg(tf.minimum(unclipped, clipped));
  } else if (lossType === 'cispo') {
    perToken = cispoTerm(ratio, adv, logProbs, epsilonHigh);
  } else if (lossType === 'sapo') {
    perToken = sapoTerm(
      ratio,
      adv,
      options.sapoTemperaturePos ?? SAPO_DEFAULTS.pos,
      options.sapoTemperatureNeg ?? SAPO_DEFAULTS.neg,
    );
  } else if (lossType === 'vespo') {
    phi = vespoWeights(logProbs, oldLogProbs, mask, adv, options.vespo ?? VESPO_DEFAULTS);
    perToken = vespoTerm(phi, adv, logProbs);
  } else throw new RangeError(`grpoLoss: unknown loss type ${String(lossType)}`);
  if (options.offPolicyMaskThreshold !== undefined)
    perToken = tf.mul(perToken, offPolicyMask(logProbs, oldLogProbs, mask, adv, options.offPolicyMaskThreshold));
  const entropyMask = highEntropyMask(inputs, options, mask);
  if (entropyMask !== null) perToken = tf.mul(perToken, entropyMask); // [B, T]
  if (inputs.importanceWeights) perToken = tf.mul(perToken, inputs.importanceWeights);
  let kl: tf.Tensor2D = tf.zerosLike(logProbs);
  if (refLogProbs !== null && beta > 0) {
    const delta = tf.sub(refLogProbs, logProbs);
    kl = tf.sub(tf.sub(tf.exp(delta), delta), 1);
    if (options.useBiasCorrectionKl) kl = tf.mul(kl, ratio);
    perToken = tf.add(perToken, tf.mul(beta, kl));
  }
  const masked: tf.Tensor2D = tf.mul(perToken, mask); // [B, T]
  let loss = normalise(masked, mask, inputs, options);
  let entropyBonus: tf.Scalar = tf.scalar(0);
  if (options.entropyCoef !== undefined) {
    // Computed whenever the bonus is on, also when this pass applies c = 0 (adaptive control measures the entropy).
    const { entropies } = inputs;
    if (!entropies) throw new RangeError('grpoLoss: entropyCoef needs the per-token entropies');
    if (options.totalTokens === undefined)
      throw new RangeError('grpoLoss: entropyCoef needs totalTokens (the active tokens of the whole step)');
    // H̄'s share: Σ m·H over this micro-batch / the step's active tokens, so the shares add up to the step's mean.
    // With topEntropyQuantile < 1 only the high-entropy tokens carry it (m·h, as the policy term), over the same T_step.
    entropyBonus = tf.div(tf.sum(tf.mul(entropies, entropyMask ?? mask)), Math.max(1, options.totalTokens));
    if (options.entropyCoef !== 0) loss = tf.sub(loss, tf.mul(options.entropyCoef, entropyBonus));
  }

  // TRL's clip statistics: a ratio counts as clipped when the clipped branch is the one the min selects and it differs
  // from the unclipped one.
  const isLow = tf.logicalAnd(tf.less(capped, 1 - epsilon), tf.less(adv, 0));
  const isHigh = tf.logicalAnd(tf.greater(capped, 1 + epsilonHigh), tf.greater(adv, 0));
  const isClipped = tf.logicalOr(isLow, isHigh);
  const tokens: tf.Scalar = tf.sum(mask);
  const perUnit = (flags: tf.Tensor): tf.Scalar =>
    (level === 'token'
      ? tf.sum(tf.mul(tf.cast(flags, 'float32'), mask))
      : tf.sum(tf.cast(flags, 'float32'))) as tf.Scalar;
  // Per completion: the share of its tokens flagged (token level) or its flag (sequence level); rows with no tokens out.
  const rowTokens = tf.sum(mask, 1); // [B]
  const hasTokens = tf.greater(rowTokens, 0);
  const perRow = (flags: tf.Tensor): tf.Tensor1D =>
    (level === 'token'
      ? tf.div(tf.sum(tf.mul(tf.cast(flags, 'float32'), mask), 1), tf.maximum(rowTokens, 1))
      : tf.reshape(tf.cast(flags, 'float32'), [-1])) as tf.Tensor1D;
  const rows = logProbs.shape[0];
  const sums: LossSums = {
    tokens,
    kl: tf.sum(tf.mul(kl, mask)),
    clipped: tf.sum(tf.mul(tf.cast(isClipped, 'float32'), mask)),
    ratio: tf.sum(tf.mul(ratio, mask)),
    clipLow: perUnit(isLow),
    clipHigh: perUnit(isHigh),
    clipRegion: perUnit(isClipped),
    clipUnits: level === 'token' ? tokens : tf.scalar(rows),
    clipLowMin: tf.min(tf.where(hasTokens, perRow(isLow), tf.fill([rows], Infinity))),
    clipHighMax: tf.max(tf.where(hasTokens, perRow(isHigh), tf.fill([rows], -Infinity))),
    cispoClipped:
      lossType === 'cispo'
        ? tf.sum(tf.mul(tf.cast(tf.logicalAnd(tf.greater(ratio, epsilonHigh), tf.greater(adv, 0)), 'float32'), mask))
        : tf.scalar(0),
    phi: phi === null ? tf.scalar(0) : tf.sum(phi),
    rows: tf.scalar(rows),
    entropyBonus,
  };
  return { loss, sums };
}

/** m_it: the padding mask, times 0 for every row that hit the token limit when maskTruncatedCompletions is on. */
function lossMask(inputs: LossInputs, options: LossOptions): tf.Tensor2D {
  if (!options.maskTruncatedCompletions) return inputs.mask;
  const { finished } = inputs;
  const rows = inputs.mask.shape[0];
  if (!finished || finished.length !== rows) {
    throw new RangeError(
      `grpoLoss: maskTruncatedCompletions needs one finished flag per row (${rows}), got ${finished?.length ?? 'none'}`,
    );
  }
  const keep = tf.tensor2d(
    Float32Array.from(finished, (f) => (f ? 1 : 0)),
    [rows, 1],
  ); // [B, 1]
  return tf.mul(inputs.mask, keep);
}

/** h_it (constant): 1 for tokens whose entropy is at or above the threshold, within the loss mask; null when ρ = 1. */
function highEntropyMask(inputs: LossInputs, options: LossOptions, mask: tf.Tensor2D): tf.Tensor2D | null {
  const rho = options.topEntropyQuantile ?? 1;
  if (rho >= 1) return null;
  const { entropies } = inputs;
  if (!entropies) throw new RangeError('grpoLoss: topEntropyQuantile < 1 needs the per-token entropies');
  const threshold = options.entropyThreshold ?? entropyThreshold(entropies, mask, rho);
  // TRL: (entropies · mask ≥ threshold) & mask. With no tokens at all the threshold is +∞ and nothing is kept.
  return tf.mul(tf.cast(tf.greaterEqual(tf.mul(entropies, mask), threshold), 'float32'), mask);
}

/** The scalar loss from the masked per-token terms [B, T]: the loss types' normalisers. */
function normalise(masked: tf.Tensor2D, mask: tf.Tensor2D, inputs: LossInputs, options: LossOptions): tf.Scalar {
  switch (options.lossType) {
    case 'grpo':
    case 'sapo': {
      // grpo and sapo: L = (1/N) Σ_i [ Σ_t m_it ℓ_it / max(1, Σ_t m_it) ]      N = totalSequences (the step's completions).
      // Each completion weighs the same whatever its length (TRL: per-sequence token mean, then mean over sequences).
      const lengths = tf.maximum(tf.sum(mask, 1), 1);
      return tf.div(tf.sum(tf.div(tf.sum(masked, 1), lengths)), options.totalSequences);
    }
    case 'bnpo': {
      // L = (1/K) Σ_i Σ_t m_it ℓ_it / max(1, T_b(i))      T_b(i) = active tokens of the local batch row i belongs to,
      // K = local batches per step. Every token of a local batch weighs the same (TRL: token mean over the local batch,
      // divided by the gradient-accumulation steps).
      const { localBatchTokens } = inputs;
      if (!localBatchTokens || localBatchTokens.length !== masked.shape[0]) {
        throw new RangeError(`grpoLoss: bnpo needs the local batch's token count for each row (${masked.shape[0]})`);
      }
      const divisors = tf.tensor1d(
        Float32Array.from(localBatchTokens, (n) => Math.max(1, n) * (options.localBatches ?? 1)),
      ); // [B]
      return tf.sum(tf.div(tf.sum(masked, 1), divisors));
    }
    case 'dr_grpo':
      // L = Σ_i Σ_t m_it ℓ_it / (N · L_max)      N = totalSequences, L_max = maxCompletionTokens: a constant, so no
      // length bias (Dr. GRPO).
      return tf.div(tf.sum(masked), options.totalSequences * options.maxCompletionTokens);
    case 'dapo':
    case 'cispo':
    case 'vespo': {
      // dapo, cispo, vespo: L = Σ_i Σ_t m_it ℓ_it / max(1, T_step)      T_step = totalTokens, the active tokens of the
      // whole optimiser step (TRL's num_items_in_batch): every token of the step weighs the same.
      if (options.totalTokens === undefined)
        throw new RangeError(`grpoLoss: ${options.lossType} needs totalTokens (the active tokens of the whole step)`);
      return tf.div(tf.sum(masked), Math.max(1, options.totalTokens));
    }
    case 'luspo':
      // L = (1/N) Σ_i |o_i| · ℓ_i = (1/N) Σ_i Σ_t m_it ℓ_it      |o_i| = Σ_t m_it, N = totalSequences. GSPO's per-sequence
      // term scaled by the completion's length (TRL: (per_token_loss · mask.sum(1)).mean(), per_token_loss [B, 1]):
      // the grpo normaliser without its division by the length. With β > 0 the KL enters as |o_i| × its token mean =
      // its token sum; TRL's code broadcasts the [B, 1] term against the [B, T] KL and takes the mean over all B × T
      // cells, padding included, which makes its KL weight depend on the batch's padded width (see docs/training.md).
      return tf.div(tf.sum(masked), options.totalSequences);
    default:
      throw new RangeError(`grpoLoss: unknown loss type ${String(options.lossType)}`);
  }
}

/**
 * Scale gradients so that their global L2 norm is at most `maxNorm` (0 = no clipping). Returns the norm before
 * clipping. Disposes the gradients it replaces.
 */
export function clipGradientsByGlobalNorm(
  grads: tf.NamedTensorMap,
  maxNorm: number,
): { grads: tf.NamedTensorMap; norm: number } {
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
