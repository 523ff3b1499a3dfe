// The step-wide counts the loss types divide by. loss.ts sees one learner micro-batch at a time, but
// its divisors are properties of the whole optimiser step, so the loop computes them once from the step's completions
// and hands each micro-batch its share: totalSequences (grpo, dr_grpo), totalTokens (dapo), and for bnpo the token
// count of the local batch each completion belongs to.

export interface StepCompletion {
  /** Completion tokens the learner scores (the mask's row sum: Completion.tokens.length). */
  tokens: number;
  /** Completion.finished: false when it hit the token limit. */
  finished: boolean;
}

export interface StepNormalisers {
  /** Completions in the step. */
  totalSequences: number;
  /** Tokens that carry loss in the step: all completion tokens, less those of truncated completions when masked. */
  totalTokens: number;
  /** Local batches in the step (bnpo's K). */
  localBatches: number;
  /** Per completion, in step order: the tokens that carry loss in its local batch (bnpo's T_b). */
  localBatchTokens: Float32Array;
}

/**
 * Counts for a step whose completions are laid out in step order, `completionsPerLocalBatch` to a local batch (one
 * gradient-accumulation batch: promptsPerStep × groupSize). The last local batch may be short (dynamic sampling can
 * leave a step with fewer groups than it asked for).
 */
export function stepNormalisers(
  completions: readonly StepCompletion[],
  completionsPerLocalBatch: number,
  maskTruncatedCompletions: boolean,
): StepNormalisers {
  if (!Number.isInteger(completionsPerLocalBatch) || completionsPerLocalBatch < 1) {
    throw new RangeError(
      `stepNormalisers: a local batch needs a positive whole number of completions, got ${completionsPerLocalBatch}`,
    );
  }
  const active = completions.map((c) => (maskTruncatedCompletions && !c.finished ? 0 : c.tokens));
  const localBatches = Math.ceil(completions.length / completionsPerLocalBatch);
  const localBatchTokens = new Float32Array(completions.length);
  for (let b = 0; b < localBatches; b++) {
    const from = b * completionsPerLocalBatch;
    const to = Math.min(from + completionsPerLocalBatch, completions.length);
    const sum = active.slice(from, to).reduce((s, n) => s + n, 0);
    localBatchTokens.fill(sum, from, to);
  }
  return {
    totalSequences: completions.length,
    totalTokens: active.reduce((s, n) => s + n, 0),
    localBatches,
    localBatchTokens,
  };
}
