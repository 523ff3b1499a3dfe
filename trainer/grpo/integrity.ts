// Every step checks that the learner saw what the sampler saw, on by default: the failures users of async trainers
// report as their worst are silent (images that never reach the training step while the loss still falls, image-token
// counts that differ between the rollout engine and the trainer, sampler and trainer log-probs that drift apart).
//   prompts      each sequence's prompt in the learner's batch has the image-token count, the pixel content (hash)
//                and the token ids of the prompt its group was sampled from (a rollout server's: the chat messages it
//                was sent, read back through the trainer's processor)
//   completions  the completion tokens the learner scores are the ones the sampler returned, byte for byte, with one
//                sampled log-prob each
//   log-probs    |Δ| between the sampler's log-probs (Completion.samplingLogProbs) and the learner's old-policy ones,
//                logged every step under TRL's sampling/sampling_logp_difference/mean and /max; a prompt whose mean
//                |Δ| over its completions' tokens exceeds logpDifferenceThreshold stops the run
// A failed check is one line naming the step, the prompt and the gap; it is raised before the step's update is
// applied, so the last checkpoint is the run's state and --resume continues from it.
import { UserError } from '../../core/errors.ts';
import { promptPrint, tokensHash, type PromptPrint } from '../../models/prompt-print.ts';
import type { Completion, EncodedPrompt, SequenceBatchItem } from '../../models/types.ts';

/** What the sampler saw and returned for one completion, recorded when its round came back. */
export interface SampleRecord {
  prompt: PromptPrint;
  tokens: string;
  length: number;
  /** Sampled log-probs it came with (null: the sampler records none). */
  logProbs: number | null;
}

/** Records of a round: the prompt each group was sampled from (a server's: what it was sent), each completion. */
export function recordRound(
  prompts: readonly EncodedPrompt[],
  groups: readonly Completion[][],
  imageTokenId: number | undefined,
): SampleRecord[][] {
  return groups.map((group, k) => {
    const own = promptPrint(prompts[k], imageTokenId);
    return group.map((c) => ({
      prompt: c.sentPrompt ?? own,
      tokens: tokensHash(c.tokens),
      length: c.tokens.length,
      logProbs: c.samplingLogProbs?.length ?? null,
    }));
  });
}

function fail(step: number, prompt: string, gap: string): never {
  throw new UserError(
    `integrity check, step ${step}, prompt ${prompt}: ${gap}; the step was not applied, the last checkpoint is kept (--resume continues from it)`,
  );
}

/** Where two prompt prints differ, in words (null: the same). */
function promptGap(learner: PromptPrint, sampler: PromptPrint): string | null {
  if (learner.imageTokens !== sampler.imageTokens)
    return `the learner's prompt has ${learner.imageTokens} image tokens, the sampler's ${sampler.imageTokens}`;
  if (learner.images !== sampler.images)
    return `the learner's prompt has ${learner.images} images, the sampler's ${sampler.images}`;
  if (learner.pixelsHash !== sampler.pixelsHash)
    return `the learner's image pixels (sha256 ${learner.pixelsHash}) are not the sampler's (${sampler.pixelsHash})`;
  if (learner.tokensHash !== sampler.tokensHash)
    return `the learner's prompt tokens (${learner.tokens}, sha256 ${learner.tokensHash}) are not the sampler's (${sampler.tokens}, ${sampler.tokensHash})`;
  return null;
}

/**
 * The learner's sequences (the step's trained completions, in order) against what the sampler recorded for each;
 * `promptOf(i)` names sequence i's prompt. Throws the first difference.
 */
export function checkLearnerBatch(
  step: number,
  sequences: readonly SequenceBatchItem[],
  records: readonly SampleRecord[],
  imageTokenId: number | undefined,
  promptOf: (i: number) => string,
): void {
  if (sequences.length !== records.length)
    fail(step, '-', `the learner has ${sequences.length} sequences, the sampler returned ${records.length}`);
  const prints = new Map<EncodedPrompt, PromptPrint>();
  sequences.forEach((seq, i) => {
    const record = records[i];
    let print = prints.get(seq.prompt);
    if (!print) prints.set(seq.prompt, (print = promptPrint(seq.prompt, imageTokenId)));
    const gap = promptGap(print, record.prompt);
    if (gap) fail(step, promptOf(i), gap);
    if (seq.completion.length !== record.length || tokensHash(seq.completion) !== record.tokens)
      fail(
        step,
        promptOf(i),
        `the learner scores a completion of ${seq.completion.length} tokens (sha256 ${tokensHash(seq.completion)}) that is not the sampler's (${record.length} tokens, ${record.tokens})`,
      );
    if (record.logProbs !== null && record.logProbs !== record.length)
      fail(
        step,
        promptOf(i),
        `the sampler returned ${record.logProbs} log-probs for a completion of ${record.length} tokens`,
      );
  });
}

/** |Δ log-prob| sums of a step: over all tokens (TRL's metrics), and per prompt (the threshold). */
export class LogpDifference {
  private sum = 0;
  private max = 0;
  private tokens = 0;
  private readonly byPrompt = new Map<number, { sum: number; tokens: number }>();

  /**
   * Row `row` of a learner chunk: its old-policy log-probs and mask ([T] each, the chunk's width) against the sampler's
   * log-probs of its tokens; `prompt` is the index of its group.
   */
  add(prompt: number, old: Float32Array, mask: Float32Array, sampling: Float32Array): void {
    const entry = this.byPrompt.get(prompt) ?? { sum: 0, tokens: 0 };
    for (let t = 0; t < mask.length && t < sampling.length; t++) {
      // A non-finite learner log-prob is the NaN streak's to count (its update is skipped), not a sampler's gap.
      if (mask[t] === 0 || !Number.isFinite(old[t])) continue;
      const d = Number.isFinite(sampling[t]) ? Math.abs(old[t] - sampling[t]) : Infinity;
      this.sum += d;
      this.max = Math.max(this.max, d);
      this.tokens++;
      entry.sum += d;
      entry.tokens++;
    }
    this.byPrompt.set(prompt, entry);
  }

  /** TRL's sampling/sampling_logp_difference/mean and /max (null without sampled log-probs). */
  metrics(): Record<string, number | null> {
    const none = this.tokens === 0;
    return {
      'sampling/sampling_logp_difference/mean': none ? null : this.sum / this.tokens,
      'sampling/sampling_logp_difference/max': none ? null : this.max,
    };
  }

  /** Stop the run when a prompt's mean |Δ| exceeds `threshold` (the largest gap is named); `promptOf` names a group. */
  check(step: number, threshold: number, promptOf: (group: number) => string): void {
    let worst: { group: number; mean: number } | null = null;
    for (const [group, { sum, tokens }] of this.byPrompt) {
      const mean = tokens > 0 ? sum / tokens : 0;
      if (!(mean <= threshold) && (worst === null || !(mean <= worst.mean))) worst = { group, mean };
    }
    if (worst)
      fail(
        step,
        promptOf(worst.group),
        `the sampler's log-probs differ from the learner's by ${worst.mean.toPrecision(3)} nats per token on average (threshold ${threshold}, --logp-difference-threshold): it sampled with other weights, at another temperature, or returned other tokens than it scored`,
      );
  }
}
