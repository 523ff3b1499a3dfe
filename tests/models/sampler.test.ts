// The Sampler contract's default sampleGroups (sampleEachPrompt): a sampler that decodes one prompt at a time answers
// every prompt in order and draws from the caller's Rng in that order, so a seed gives the same rollouts either way.
import { describe, expect, it } from 'vitest';
import { Rng } from '../../core/rng.ts';
import { sampleEachPrompt } from '../../models/sampler.ts';
import type { Completion, EncodedPrompt, SamplingOptions } from '../../models/types.ts';

/** A one-prompt-at-a-time sampler whose completions show which prompt they answer and which Rng draws they used. */
const oneByOne = {
  calls: [] as number[],
  sampleGroup(prompt: EncodedPrompt, group: number, _options: SamplingOptions, rng: Rng): Completion[] {
    this.calls.push(prompt.tokens[0]);
    return Array.from({ length: group }, () => {
      const tokens = [prompt.tokens[0], Math.floor(rng.next() * 1000)];
      return { tokens, text: tokens.join(' '), logProbs: new Float32Array(2), finished: true };
    });
  },
};

describe('sampleEachPrompt', () => {
  it('answers each prompt in order with `group` completions, the Rng drawn prompt after prompt', () => {
    const prompts: EncodedPrompt[] = [7, 3, 5].map((t) => ({ tokens: [t], images: [] }));
    const options = { temperature: 1, topP: 1, maxNewTokens: 2 };
    const groups = sampleEachPrompt(oneByOne, prompts, 2, options, new Rng(4, 'test'));
    expect(oneByOne.calls).toEqual([7, 3, 5]);
    expect(groups.map((g) => g.map((c) => c.tokens[0]))).toEqual([
      [7, 7],
      [3, 3],
      [5, 5],
    ]);
    const rng = new Rng(4, 'test');
    const draws = Array.from({ length: 6 }, () => Math.floor(rng.next() * 1000));
    expect(groups.flat().map((c) => c.tokens[1])).toEqual(draws);
  });
});
