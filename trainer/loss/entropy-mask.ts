// The entropy threshold of "Beyond the 80/20 rule" (TRL's top_entropy_quantile = ρ). Only tokens
// whose entropy is at or above the (1 − ρ) quantile of the batch's token entropies carry the policy gradient (loss.ts
// applies the mask; the KL term is left alone). ρ = 1 keeps every token; ρ = 0 keeps only the highest-entropy ones.
// The quantile interpolates linearly between order statistics, as torch.quantile (TRL) does.
import * as tf from '@tensorflow/tfjs';

/**
 * The q-quantile of `values` with linear interpolation: position q·(n − 1) in the sorted values (torch.quantile's
 * default). +∞ for no values, so that nothing passes a ≥ test.
 */
export function quantile(values: ArrayLike<number>, q: number): number {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile: q must be in [0, 1], got ${q}`);
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return Infinity;
  const position = q * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - below);
}

/** The entropies of the real tokens only ([B, T] with its mask → a flat list), to pool several micro-batches. */
export function maskedValues(entropies: tf.Tensor2D, mask: tf.Tensor2D): Float32Array {
  const e = entropies.dataSync();
  const m = mask.dataSync();
  const out: number[] = [];
  for (let k = 0; k < e.length; k++) if (m[k] > 0) out.push(e[k]);
  return Float32Array.from(out);
}

/**
 * The entropy a token needs to carry the policy gradient under top-entropy quantile ρ: the (1 − ρ) quantile of the
 * real tokens' entropies. Pass one micro-batch's tensors (TRL's behaviour) or, so that the update does not depend on
 * the learner's memory chunking, the pooled values of the whole step (`maskedValues` of each chunk, concatenated).
 */
export function entropyThreshold(
  entropies: tf.Tensor2D | ArrayLike<number>,
  mask: tf.Tensor2D | null,
  rho: number,
): number {
  if (!(rho >= 0 && rho <= 1))
    throw new RangeError(`entropyThreshold: topEntropyQuantile must be in [0, 1], got ${rho}`);
  const values = entropies instanceof tf.Tensor ? maskedValues(entropies, mask ?? tf.onesLike(entropies)) : entropies;
  return quantile(values, 1 - rho);
}
