// Phase 3 of a step: the step's sequences, checked against what the sampler saw (integrity.ts), cut into learner
// chunks, each with its constants: the reference policy's log-probs (LoRA off; for the KL term when β > 0) and the old
// policy's (no grad; for the ratio when μ > 1), the sampler's log-probs, and with a top-entropy mask the step's
// entropy threshold.
import * as tf from '@tensorflow/tfjs';
import type { SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from '../../models/types.ts';
import type { StepObjective } from '../loss/objective.ts';
import { entropyThreshold, maskedValues } from '../loss/entropy-mask.ts';
import { chunksByCost, chunksWithin } from '../chunks.ts';
import type { Run } from './run.ts';
import type { Rollouts } from './collect-groups.ts';
import { checkLearnerBatch } from './integrity.ts';

/** Phase 3: a learner chunk with its constants (kept tensors, disposed after the update). */
export interface LearnerBatch {
  seqs: SequenceBatchItem[];
  adv: Float32Array;
  /** [chunk, maxLen] reference log-probs (LoRA off); null when β = 0 or refIsPolicy. */
  ref: tf.Tensor2D | null;
  /**
   * β > 0 but the adapters are exactly zero with a separate inference engine (EngineSampler.referenceIsPolicy): the
   * reference log-probs are the first gradient pass's own, detached (set into `ref` there), as tfjs's reference pass
   * would give them bit for bit.
   */
  refIsPolicy: boolean;
  /** [chunk, maxLen] old-policy log-probs; null when μ = 1 (taken from the gradient pass itself). */
  old: tf.Tensor2D | null;
  /** Indices of the chunk's completions among the step's trained completions (objective.rows). */
  indices: number[];
  /** The sampler's log-probs of each row's tokens (Completion.samplingLogProbs; null: it recorded none). */
  sampled: (Float32Array | null)[];
  /** Whether the importance-sampling correction weighs the rows by them (rollout servers, on by default). */
  correct: boolean;
}

/**
 * Learner chunks of at most `learnerBatch` sequences and `learnerTokens` tokens, as the learner counts a pass
 * (Learner.passTokens: a shared prompt once) or else summed (a memory bound only: the loss divides
 * by the step's totals, so the summed chunk gradients equal the full-batch gradient), each with the reference and old
 * log-probs, which are constants of the step. With a top-entropy quantile below 1, the old-policy pass also gives the
 * entropies, pooled over the step into one threshold so that the mask does not depend on the chunking.
 */
export function referenceAndOldLogProbs(
  run: Run,
  step: number,
  { items, groups, records }: Rollouts,
  advantages: Float32Array,
  objective: StepObjective,
): { batches: LearnerBatch[]; entropyThreshold?: number } {
  const { config, sampler } = run;
  const refIsPolicy = config.beta > 0 && run.engine.referenceIsPolicy();
  const sequences: SequenceBatchItem[] = items.flatMap((item, k) =>
    groups[k].map((c) => ({ prompt: item.prompt, completion: c.tokens })),
  );
  // Before any pass: the learner's batch is what the sampler saw and returned.
  checkLearnerBatch(
    step,
    sequences,
    records.flat(),
    sampler.imageTokenId,
    (i) => items[Math.floor(i / config.groupSize)].episode.id,
  );
  const correct = run.engine.remote !== undefined && config.vllmImportanceSamplingCorrection;
  const samplingLogProbs = groups.flat().map((c) => c.samplingLogProbs ?? null);
  const pooled: Float32Array[] = [];
  const indexed = sequences.map((seq, i) => ({ seq, i }));
  // A learner that says what a pass costs (shared prompts counted once) is chunked by that; otherwise by the sum.
  const passTokens = run.learner.passTokens?.bind(run.learner);
  const planned = passTokens
    ? chunksByCost(indexed, (chunk) => passTokens(chunk.map((c) => c.seq)), config.learnerBatch, config.learnerTokens)
    : chunksWithin(
        indexed,
        ({ seq }) => seq.prompt.tokens.length + seq.completion.length,
        config.learnerBatch,
        config.learnerTokens,
      );
  const seqsOf = planned.map((chunk) => chunk.map((c) => c.seq));
  // Every chunk's pass in one call where the sampler takes them together (it may spread them over cores).
  // (tidy: a tfjs forward's intermediates go, its results stay.)
  const scoreAll = (options: TokenLogProbsOptions): TokenLogProbs[] =>
    sampler.tokenLogProbsMany
      ? sampler.tokenLogProbsMany(seqsOf, options)
      : seqsOf.map(
          (seqs) =>
            tf.tidy(
              () => sampler.tokenLogProbs(seqs, options) as unknown as tf.TensorContainer,
            ) as unknown as TokenLogProbs,
        );
  const refs =
    config.beta > 0 && !refIsPolicy
      ? scoreAll({ useLora: false, temperature: config.temperature }).map((lp) => {
          lp.mask.dispose();
          lp.entropy?.dispose();
          return tf.keep(lp.logProbs);
        })
      : null;
  // With μ = 1 the old policy is the current one: its log-probs are taken from the gradient pass itself, and this
  // pass runs only when the entropy mask needs the step's entropies first.
  const olds =
    config.numIterations > 1 || objective.needsEntropy
      ? scoreAll({ useLora: true, withEntropy: objective.needsEntropy, temperature: config.temperature })
      : null;
  const batches = planned.map((chunk, k) => {
    const seqs = seqsOf[k];
    const indices = chunk.map((c) => c.i);
    const adv = Float32Array.from(chunk, (c) => advantages[c.i]);
    const ref = refs ? refs[k] : null;
    let old: tf.Tensor2D | null = null;
    if (olds) {
      const lp = olds[k];
      if (lp.entropy) pooled.push(maskedValues(lp.entropy, lp.mask));
      if (config.numIterations > 1) old = lp.logProbs;
      else lp.logProbs.dispose();
      lp.mask.dispose();
      lp.entropy?.dispose();
    }
    return {
      seqs,
      adv,
      ref,
      old,
      indices,
      refIsPolicy,
      sampled: indices.map((i) => samplingLogProbs[i]),
      correct,
    };
  });
  if (!objective.needsEntropy) return { batches };
  const all = new Float32Array(pooled.reduce((n, p) => n + p.length, 0));
  pooled.reduce((at, p) => (all.set(p, at), at + p.length), 0);
  return { batches, entropyThreshold: entropyThreshold(all, null, config.topEntropyQuantile) };
}
