// One optimiser step's objective, assembled from the training config and the step's completions (layer: trainer/):
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
import type { TrainConfig } from './config.ts';
import type { LossInputs, LossOptions, LossSums } from './loss.ts';
import { stepNormalisers, type StepCompletion } from './loss-normalisers.ts';
import type { StepLossSums } from './trl-metrics.ts';

/** The config keys the objective reads. */
export type ObjectiveConfig = Pick<
  TrainConfig,
  'lossType' | 'importanceSamplingLevel' | 'epsilon' | 'epsilonHigh' | 'beta' | 'maskTruncatedCompletions' | 'topEntropyQuantile' | 'promptsPerStep' | 'groupSize'
>;

export interface StepObjective {
  /** The same for every micro-batch and pass of the step. */
  options: LossOptions;
  /** Per-row loss inputs of a micro-batch holding the step's completions `indices` (in the micro-batch's row order). */
  rows(indices: readonly number[]): Pick<LossInputs, 'finished' | 'localBatchTokens'>;
  /** The learner pass must return entropies (and pass them as `entropies`): the top-entropy mask reads them. */
  needsEntropy: boolean;
}

/**
 * The step's objective. `completions` are the step's completions in step order (group after group, a local batch of
 * promptsPerStep × groupSize after another); `maxCompletionTokens` is the sampling limit (dr_grpo's constant).
 */
export function stepObjective(config: ObjectiveConfig, completions: readonly StepCompletion[], maxCompletionTokens: number): StepObjective {
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
  };
  return {
    options,
    rows: (indices) => ({
      finished: indices.map((i) => completions[i].finished),
      localBatchTokens: Float32Array.from(indices, (i) => step.localBatchTokens[i]),
    }),
    needsEntropy: config.topEntropyQuantile < 1,
  };
}

export function emptyLossSums(): StepLossSums {
  return { tokens: 0, kl: 0, clipLow: 0, clipHigh: 0, clipRegion: 0, clipUnits: 0, entropy: 0, entropyTokens: 0 };
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
