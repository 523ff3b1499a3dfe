// The most likely tokens of every draw (SamplingOptions.topLogProbs, what `metrl serve` answers top_logprobs with):
// topLogProbs of a logits row is the full log-softmax sorted, cut to k (banned tokens left out); the built-in model's
// draws give them on tfjs, on one ONNX Runtime session and on a rollout split over two sessions alike, the greedy token
// first with the log-prob the draw reports; without the option no draw carries them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../models/backend.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { BuiltinOrtSampler } from '../../models/onnx/builtin/builtin-sampler.ts';
import { topLogProbs } from '../../models/token-sampling.ts';
import { Rng } from '../../core/rng.ts';
import type { EncodedPrompt } from '../../models/types.ts';

let policy: BuiltinPolicy;
let prompts: EncodedPrompt[];
let single: BuiltinOrtSampler;
let parallel: BuiltinOrtSampler;

beforeAll(async () => {
  await initBackend('wasm', null);
  policy = BuiltinPolicy.create({
    architecture: { dModel: 32, nLayers: 1, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8 },
    seed: 5,
  });
  prompts = ['shell\n1\nA: 1 swap 2\nFINAL ANSWER: ', 'boxes\nx\nFINAL ANSWER: '].map((text) =>
    policy.encode([{ type: 'text', text }]),
  );
  single = new BuiltinOrtSampler(policy, { threads: 1 });
  parallel = new BuiltinOrtSampler(policy, { threads: 2, parallel: 'always' });
});

afterAll(() => {
  single.dispose();
  parallel.dispose();
  policy.dispose();
});

describe('topLogProbs', () => {
  it('is the log-softmax sorted, best first, cut to k, without banned tokens', () => {
    const row = Float32Array.from([0.5, 2, -1, 2, 3, 0]);
    const z = Math.log(Array.from(row).reduce((s, x) => s + Math.exp(x), 0));
    expect(topLogProbs(row, 3).map((e) => e.token)).toEqual([4, 1, 3]);
    topLogProbs(row, 6).forEach((e) => expect(e.logProb).toBeCloseTo(row[e.token] - z, 6));
    expect(topLogProbs(row, 2, new Set([4])).map((e) => e.token)).toEqual([1, 3]);
    expect(topLogProbs(row, 10)).toHaveLength(6);
  });
});

describe('draws with topLogProbs', () => {
  it('give the same most likely tokens on tfjs, one ONNX Runtime session and two, the greedy token first', () => {
    const options = { temperature: 0, topP: 1, maxNewTokens: 6, topLogProbs: 4 };
    const runs = [policy, single, parallel].map((s) => s.sampleGroups(prompts, 2, options, new Rng(1, 'draws')));
    for (const run of runs)
      for (const c of run.flat()) {
        expect(c.topLogProbs).toHaveLength(c.tokens.length);
        c.topLogProbs!.forEach((top, i) => {
          expect(top).toHaveLength(4);
          expect(top[0].token).toBe(c.tokens[i]);
          expect(top[0].logProb).toBeCloseTo(c.logProbs[i], 4);
        });
      }
    const tokens = (run: (typeof runs)[number]) =>
      run.flat().map((c) => c.topLogProbs!.map((t) => t.map((e) => e.token)));
    expect(tokens(runs[1])).toEqual(tokens(runs[0]));
    expect(tokens(runs[2])).toEqual(tokens(runs[1]));
    const without = single.sampleGroups(prompts, 1, { temperature: 0, topP: 1, maxNewTokens: 3 }, new Rng(1, 'd'));
    expect(without.flat().every((c) => c.topLogProbs === undefined)).toBe(true);
  });
});
