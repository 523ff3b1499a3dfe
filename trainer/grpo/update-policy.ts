// Phase 4 of a step, TRL's compute_loss and optimiser step: μ passes of the objective (objective.ts:
// loss type, clipping, masks) over the learner chunks, the gradients summed over the chunks, clipped, and one AdamW
// update per pass (Learner); the Sampler's adapters are synced after each, and the entropy controller moved. The first
// pass also measures |Δ log-prob| between the sampler and the learner (integrity.ts), and a gap past the threshold
// stops the run before that pass's update is applied.
import * as tf from '@tensorflow/tfjs';
import type { TokenLogProbs } from '../../models/types.ts';
import { summedLossGradients } from '../../models/learner.ts';
import { clipGradientsByGlobalNorm, grpoLoss } from '../loss/loss.ts';
import { addLossSums, emptyLossSums, type StepLossSums, type StepObjective } from '../loss/objective.ts';
import { appliedEntropyCoef, nextEntropyControl } from '../loss/entropy-control.ts';
import type { Run } from './run.ts';
import type { RunState } from './run-state.ts';
import type { LearnerBatch } from './reference-logprobs.ts';
import { LogpDifference } from './integrity.ts';
import {
  emptyCorrectionSums,
  importanceWeights,
  samplingTensor,
  type CorrectionSums,
} from '../loss/rollout-correction.ts';

/** Phase 4: sums over the μ passes, for the step's row. */
export interface UpdateStats {
  loss: number;
  tokens: number;
  kl: number;
  clipped: number;
  ratio: number;
  entropy: number;
  entropyTokens: number;
  gradNorm: number;
  updated: boolean;
  /** A pass had a non-finite loss or gradient (counts toward maxNanSteps); false when there was nothing to train on. */
  nonFinite: boolean;
  /** The same sums in TRL's terms (clip ratios low/high/region), for trl-metrics.ts. */
  trl: StepLossSums;
  /** Σ over passes of the loss before the entropy bonus (TRL's policy_loss); equals `loss` without a bonus. */
  policyLoss: number;
  /** The importance-sampling correction's sums (first pass), with rollout servers; null otherwise. */
  correction: CorrectionSums | null;
  /** |Δ log-prob| between the sampler and the learner's old policy (first pass). */
  logpDifference: LogpDifference;
}

/** Update: μ passes, each one AdamW step on the gradient summed over the chunks; a non-finite pass skips the rest. */
export function updatePolicy(
  run: Run,
  state: RunState,
  batches: LearnerBatch[],
  objective: StepObjective,
  promptOf: (group: number) => string,
  threshold?: number,
): UpdateStats {
  const { config, learner } = run;
  const stats: UpdateStats = {
    loss: 0,
    tokens: 0,
    kl: 0,
    clipped: 0,
    ratio: 0,
    entropy: 0,
    entropyTokens: 0,
    gradNorm: 0,
    updated: true,
    nonFinite: false,
    trl: emptyLossSums(),
    policyLoss: 0,
    correction: batches.some((b) => b.correct) ? emptyCorrectionSums() : null,
    logpDifference: new LogpDifference(),
  };
  // Dynamic sampling kept no group with a spread: nothing to learn from this step.
  if (batches.length === 0) return { ...stats, updated: false };
  const correction = {
    mode: config.vllmImportanceSamplingMode,
    clipMax: config.vllmImportanceSamplingClipMax,
    clipMin: config.vllmImportanceSamplingClipMin,
  };
  const stepOptions =
    threshold === undefined ? objective.options : { ...objective.options, entropyThreshold: threshold };
  const bonus = stepOptions.entropyCoef !== undefined;
  for (let it = 0; it < config.numIterations && stats.updated; it++) {
    // Each pass is one update: the entropy bonus applies the controller's coefficient of this update (entropy-control.ts).
    const coef = bonus ? appliedEntropyCoef(config, state.entropyControl) : 0;
    const options = bonus ? { ...stepOptions, entropyCoef: coef } : stepOptions;
    let passEntropy = 0;
    const lpOptions = {
      useLora: true,
      withEntropy: it === 0 || objective.needsEntropy,
      temperature: config.temperature,
    };
    // All chunks in one call (a learner may run a prompt group split over chunks once, or spread the work over cores);
    // the losses run in chunk order, and the pass's gradient is the sum of the chunks'.
    const { values, grads: summed } = summedLossGradients(
      learner,
      batches.map((batch) => ({
        batch: batch.seqs,
        options: lpOptions,
        loss: (lp: TokenLogProbs) => {
          const ownRef = batch.refIsPolicy && batch.ref === null;
          const detached =
            batch.old === null || ownRef ? (tf.tensor(lp.logProbs.dataSync(), lp.logProbs.shape) as tf.Tensor2D) : null;
          const oldLogProbs = batch.old ?? detached!;
          // The first pass's own log-probs are the reference's (the adapters were zero); later passes (μ > 1) keep them.
          if (ownRef) batch.ref = tf.keep(tf.clone(detached!));
          const refLogProbs = batch.ref;
          const width = lp.logProbs.shape[1];
          if (it === 0 && batch.sampled.some((row) => row !== null)) {
            const old = oldLogProbs.dataSync() as Float32Array;
            const mask = lp.mask.dataSync() as Float32Array;
            batch.sampled.forEach((row, r) => {
              if (row === null) return;
              const at = r * width;
              const group = Math.floor(batch.indices[r] / config.groupSize);
              stats.logpDifference.add(group, old.subarray(at, at + width), mask.subarray(at, at + width), row);
            });
          }
          // TRL's vllm importance-sampling weights: the learner's old log-probs against the server's (constants).
          let weights: tf.Tensor2D | undefined;
          if (batch.correct) {
            const sampling = samplingTensor(batch.sampled as Float32Array[], width);
            weights = importanceWeights(
              oldLogProbs,
              sampling,
              lp.mask,
              correction,
              it === 0 ? (stats.correction ?? undefined) : undefined,
            );
            sampling.dispose();
          }
          const out = grpoLoss(
            {
              logProbs: lp.logProbs,
              oldLogProbs,
              refLogProbs,
              mask: lp.mask,
              advantages: tf.tensor1d(batch.adv),
              entropies: lp.entropy,
              importanceWeights: weights,
              ...objective.rows(batch.indices),
            },
            options,
          );
          stats.tokens += out.sums.tokens.dataSync()[0];
          stats.kl += out.sums.kl.dataSync()[0];
          stats.clipped += out.sums.clipped.dataSync()[0];
          stats.ratio += out.sums.ratio.dataSync()[0];
          if (it === 0 && lp.entropy) {
            stats.entropy += tf.sum(tf.mul(lp.entropy, lp.mask)).dataSync()[0];
            stats.entropyTokens += out.sums.tokens.dataSync()[0];
          }
          addLossSums(stats.trl, out.sums, it === 0 ? lp.entropy : undefined, lp.mask);
          if (bonus) passEntropy += out.sums.entropyBonus.dataSync()[0];
          return out.loss;
        },
      })),
      state.variables,
    );
    const passLoss = values.reduce((sum, value) => sum + value.dataSync()[0], 0);
    tf.dispose(values);
    // The sampler and the learner drifted apart: stop before this update lands (the last checkpoint stays the run's).
    if (it === 0) stats.logpDifference.check(state.step, config.logpDifferenceThreshold, promptOf);
    const clippedGrads = clipGradientsByGlobalNorm(summed, config.maxGradNorm);
    stats.loss += passLoss;
    stats.policyLoss += passLoss + coef * passEntropy;
    if (bonus) state.entropyControl = nextEntropyControl(config, state.entropyControl, passEntropy);
    stats.gradNorm += clippedGrads.norm;
    if (Number.isFinite(passLoss) && Number.isFinite(clippedGrads.norm)) {
      state.optimizer.apply(clippedGrads.grads);
      run.engine.syncLora(state.optimizer.step);
    } else stats.updated = false;
    for (const t of Object.values(clippedGrads.grads)) t.dispose();
  }
  stats.nonFinite = !stats.updated;
  for (const b of batches) {
    b.ref?.dispose();
    b.old?.dispose();
  }
  return stats;
}
