// One optimiser step's objective, assembled from the training config and the step's completions:
// the LossOptions every learner micro-batch shares (with the step-wide divisors of loss-normalisers.ts), the per-row
// inputs of a micro-batch, and the running sums that trl-metrics.ts turns into TRL's keys. This is the one place that
// maps TrainConfig's keys onto grpoLoss, so the loop only says which completions a micro-batch holds:
//
//   const objective = stepObjective(config, completions.map((c) => ({ tokens: c.tokens.length, finished: c.finished })), maxCompletionTokens);
//   for each micro-batch (indices into the step's completions):
//     const lp = policy.tokenLogProbs(seqs, { useLora: true, withEntropy: objective.needsEntropy || it === 0, … });
//     const out = grpoLoss({ logProbs, oldLogProbs, refLogProbs, mask: lp.mask, advantages, entropies: lp.entropy,
//                            ...objective.rows(indices) }, objective.options);
//     addLossSums(sums, out.sums, lp.entropy, lp.mask);
import type * as tf from '@tensorflow/tfjs';
import type { TrainConfig } from '../config.ts';
import type { LossInputs, LossOptions, LossSums } from './loss.ts';
import { stepNormalisers, type StepCompletion } from './loss-normalisers.ts';
import { entropyBonusEnabled } from './entropy-control.ts';

/** The config keys the objective reads; TRL 1.9's options may be left out (they are off, or their loss type's default). */
export type ObjectiveConfig = Pick<
  TrainConfig,
  | 'lossType'
  | 'importanceSamplingLevel'
  | 'epsilon'
  | 'epsilonHigh'
  | 'beta'
  | 'maskTruncatedCompletions'
  | 'topEntropyQuantile'
  | 'promptsPerStep'
  | 'groupSize'
> &
  Partial<
    Pick<
      TrainConfig,
      | 'delta'
      | 'sapoTemperaturePos'
      | 'sapoTemperatureNeg'
      | 'vespoKPos'
      | 'vespoLambdaPos'
      | 'vespoKNeg'
      | 'vespoLambdaNeg'
      | 'offPolicyMaskThreshold'
      | 'useBiasCorrectionKl'
      | 'entropyCoef'
      | 'useAdaptiveEntropy'
    >
  >;

export interface StepObjective {
  /** The same for every micro-batch and pass of the step. */
  options: LossOptions;
  /** Per-row loss inputs of a micro-batch holding the step's completions `indices` (in the micro-batch's row order). */
  rows(indices: readonly number[]): Pick<LossInputs, 'finished' | 'localBatchTokens'>;
  /**
   * The learner pass must return entropies (and pass them as `entropies`): the top-entropy mask reads them, or the
   * entropy bonus differentiates them.
   */
  needsEntropy: boolean;
}

/**
 * The step's objective. `completions` are the step's completions in step order (group after group, a local batch of
 * promptsPerStep × groupSize after another); `maxCompletionTokens` is the sampling limit (dr_grpo's constant).
 */
export function stepObjective(
  config: ObjectiveConfig,
  completions: readonly StepCompletion[],
  maxCompletionTokens: number,
): StepObjective {
  const step = stepNormalisers(completions, config.promptsPerStep * config.groupSize, config.maskTruncatedCompletions);
  const options: LossOptions = {
    epsilon: config.epsilon,
    epsilonHigh: config.epsilonHigh,
    beta: config.beta,
    lossType: config.lossType,
    importanceSamplingLevel: config.importanceSamplingLevel,
    maxCompletionTokens,
    totalSequences: step.totalSequences,
    totalTokens: step.totalTokens,
    localBatches: step.localBatches,
    maskTruncatedCompletions: config.maskTruncatedCompletions,
    topEntropyQuantile: config.topEntropyQuantile,
    // TRL 1.9's options: set only when on or when their loss type reads them, so the default options are unchanged.
    ...(config.delta !== undefined ? { delta: config.delta } : {}),
    ...(config.lossType === 'sapo'
      ? { sapoTemperaturePos: config.sapoTemperaturePos, sapoTemperatureNeg: config.sapoTemperatureNeg }
      : {}),
    ...(config.lossType === 'vespo'
      ? {
          vespo: {
            kPos: config.vespoKPos ?? 2,
            lambdaPos: config.vespoLambdaPos ?? 3,
            kNeg: config.vespoKNeg ?? 3,
            lambdaNeg: config.vespoLambdaNeg ?? 2,
          },
        }
      : {}),
    ...(config.offPolicyMaskThreshold !== undefined ? { offPolicyMaskThreshold: config.offPolicyMaskThreshold } : {}),
    ...(config.useBiasCorrectionKl ? { useBiasCorrectionKl: true } : {}),
    // The coefficient a pass applies is the entropy controller's (update-policy.ts sets it per pass).
    ...(entropyBonusEnabled(config) ? { entropyCoef: config.entropyCoef ?? 0 } : {}),
  };
  return {
    options,
    rows: (indices) => ({
      finished: indices.map((i) => completions[i].finished),
      localBatchTokens: Float32Array.from(indices, (i) => step.localBatchTokens[i]),
    }),
    needsEntropy: config.topEntropyQuantile < 1 || entropyBonusEnabled(config),
  };
}

/** Sums accumulated over a step's micro-batches and passes (LossSums read back as numbers, plus the entropy). */
export interface StepLossSums {
  tokens: number;
  kl: number;
  clipLow: number;
  clipHigh: number;
  clipRegion: number;
  clipUnits: number;
  /** Σ entropy over the real tokens, and how many tokens that is (0 when entropy was not computed). */
  entropy: number;
  entropyTokens: number;
  /** Over every completion of the step and pass: the least share of low-clipped tokens, the most of high-clipped ones. */
  clipLowMin: number;
  clipHighMax: number;
  /** cispo: tokens with ρ > ε_max and A > 0. vespo: Σ φ_i over the rows. rows: completions (× passes). */
  cispoClipped: number;
  phi: number;
  rows: number;
}

export function emptyLossSums(): StepLossSums {
  return {
    tokens: 0,
    kl: 0,
    clipLow: 0,
    clipHigh: 0,
    clipRegion: 0,
    clipUnits: 0,
    entropy: 0,
    entropyTokens: 0,
    clipLowMin: Infinity,
    clipHighMax: -Infinity,
    cispoClipped: 0,
    phi: 0,
    rows: 0,
  };
}

/** Add one micro-batch's sums (read back from the device) to the step's; the entropy too when the pass computed it. */
export function addLossSums(into: StepLossSums, sums: LossSums, entropy?: tf.Tensor2D, mask?: tf.Tensor2D): void {
  const read = (t: tf.Scalar) => t.dataSync()[0];
  into.tokens += read(sums.tokens);
  into.kl += read(sums.kl);
  into.clipLow += read(sums.clipLow);
  into.clipHigh += read(sums.clipHigh);
  into.clipRegion += read(sums.clipRegion);
  into.clipUnits += read(sums.clipUnits);
  into.clipLowMin = Math.min(into.clipLowMin, read(sums.clipLowMin));
  into.clipHighMax = Math.max(into.clipHighMax, read(sums.clipHighMax));
  into.cispoClipped += read(sums.cispoClipped);
  into.phi += read(sums.phi);
  into.rows += read(sums.rows);
  if (entropy && mask) {
    const e = entropy.dataSync();
    const m = mask.dataSync();
    for (let k = 0; k < e.length; k++) {
      if (m[k] > 0) {
        into.entropy += e[k];
        into.entropyTokens++;
      }
    }
  }
}
