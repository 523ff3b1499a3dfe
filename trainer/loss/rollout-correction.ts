// TRL's vllm_importance_sampling_correction: rollouts sampled on a server (vLLM, SGLang, `metrl
// serve`) carry that engine's log-probs, which differ from the learner's for the same weights (kernels, precision,
// an adapter one update behind while it loads). The policy-gradient term of each token is weighted by
//   w = exp(logp_learner_old − logp_sampling)           token_* modes: one weight per token
//   w = exp(Σ_t m_t (logp_learner_old − logp_sampling)) sequence_* modes: one per completion (a sum, as TRL)
// then *_truncate clamps w into [clip_min, clip_max], *_mask zeroes it outside that range. The KL term is not
// weighted. Metrics under TRL's keys: sampling/sampling_logp_difference/{mean,max} (|Δ| over the tokens) and
// sampling/importance_sampling_ratio/{min,mean,max}. The learner's old log-probs are at the rollout temperature, so
// the servers must return log-probs at that temperature: vLLM's and metrl serve's --logprobs-mode processed_logprobs.
import * as tf from '@tensorflow/tfjs';

export const VLLM_IMPORTANCE_SAMPLING_MODES = [
  'token_truncate',
  'token_mask',
  'sequence_truncate',
  'sequence_mask',
] as const;
type VllmImportanceSamplingMode = (typeof VLLM_IMPORTANCE_SAMPLING_MODES)[number];

export interface CorrectionSettings {
  mode: VllmImportanceSamplingMode;
  clipMax: number;
  clipMin?: number;
}

/** Running sums over a step for the sampling/* metrics. */
export interface CorrectionSums {
  diffSum: number;
  diffMax: number;
  tokens: number;
  ratioMin: number;
  ratioSum: number;
  ratioMax: number;
  ratioCount: number;
}

export const emptyCorrectionSums = (): CorrectionSums => ({
  diffSum: 0,
  diffMax: 0,
  tokens: 0,
  ratioMin: Infinity,
  ratioSum: 0,
  ratioMax: -Infinity,
  ratioCount: 0,
});

/** Rows' sampling log-probs padded to [B, T] (T: the learner's width). */
export function samplingTensor(rows: readonly Float32Array[], width: number): tf.Tensor2D {
  const data = new Float32Array(rows.length * width);
  rows.forEach((r, i) => data.set(r.subarray(0, width), i * width));
  return tf.tensor2d(data, [rows.length, width]);
}

/**
 * The weights ([B, T] token modes, [B, 1] sequence modes; constants) for old (learner) and sampling log-probs [B, T]
 * under `mask`, adding the step's metrics to `sums` when given.
 */
export function importanceWeights(
  old: tf.Tensor2D,
  sampling: tf.Tensor2D,
  mask: tf.Tensor2D,
  settings: CorrectionSettings,
  sums?: CorrectionSums,
): tf.Tensor2D {
  return tf.tidy(() => {
    const diff = tf.mul(tf.sub(old, sampling), mask) as tf.Tensor2D;
    const sequence = settings.mode.startsWith('sequence');
    const ratio = tf.exp(sequence ? tf.sum(diff, 1, true) : diff) as tf.Tensor2D;
    const lo = settings.clipMin ?? 0;
    const hi = settings.clipMax;
    const weights = settings.mode.endsWith('truncate')
      ? tf.clipByValue(ratio, lo, hi)
      : tf.mul(ratio, tf.cast(tf.logicalAnd(tf.greaterEqual(ratio, lo), tf.lessEqual(ratio, hi)), 'float32'));
    if (sums) {
      const d = diff.dataSync();
      const m = mask.dataSync();
      const w = weights.dataSync();
      const width = mask.shape[1];
      for (let k = 0; k < d.length; k++) {
        if (m[k] === 0) continue;
        const a = Math.abs(d[k]);
        sums.diffSum += a;
        sums.diffMax = Math.max(sums.diffMax, a);
        sums.tokens++;
        if (!sequence) add(sums, w[k]);
      }
      if (sequence)
        for (let i = 0; i < w.length; i++)
          if (m.subarray(i * width, (i + 1) * width).some((x) => x > 0)) add(sums, w[i]);
    }
    return weights as tf.Tensor2D;
  });
}

function add(sums: CorrectionSums, w: number): void {
  sums.ratioMin = Math.min(sums.ratioMin, w);
  sums.ratioMax = Math.max(sums.ratioMax, w);
  sums.ratioSum += w;
  sums.ratioCount++;
}

/** TRL's sampling/* keys from a step's sums (absent without a correction). */
export function correctionMetrics(sums: CorrectionSums): Record<string, number | null> {
  const none = sums.tokens === 0;
  return {
    'sampling/sampling_logp_difference/mean': none ? null : sums.diffSum / sums.tokens,
    'sampling/sampling_logp_difference/max': none ? null : sums.diffMax,
    'sampling/importance_sampling_ratio/min': sums.ratioCount === 0 ? null : sums.ratioMin,
    'sampling/importance_sampling_ratio/mean': sums.ratioCount === 0 ? null : sums.ratioSum / sums.ratioCount,
    'sampling/importance_sampling_ratio/max': sums.ratioCount === 0 ? null : sums.ratioMax,
  };
}
