// The ONNX Runtime engine on several cores (models/onnx/builtin/worker-pool.ts: sessions of one thread on the main thread and
// in worker threads) against one session on the main thread: rollouts split by prompt, each part drawing its own rows,
// give the same completions (the same tokens, log-probs and texts) for a seed and leave the Rng in the same state
// (two and three parts, sampled and greedy, rows finishing at different steps); scoring several batches at once gives
// each batch's single-session log-probs and entropies; the learner's lossGradientsSum over several chunks (prompt
// groups split over chunks) gives the single session's losses and summed LoRA gradients (within 1e-6 relative) and
// tfjs autodiff's, chunk by chunk summed (1e-4, the learner test's bound), with the losses called in chunk order. A
// tiny random model with images and LoRA.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { loraAdapters } from '../../models/builtin/lora.ts';
import { BuiltinOrtSampler } from '../../models/onnx/builtin/builtin-sampler.ts';
import { BuiltinOrtLearner } from '../../models/onnx/builtin/builtin-learner.ts';
import { executorCount } from '../../models/onnx/builtin/worker-pool.ts';
import { summedLossGradients, type LogProbLoss } from '../../models/learner.ts';
import { Rng } from '../../core/rng.ts';
import type { RawImage } from '../../core/image.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs } from '../../models/types.ts';
import { relativeError } from '../helpers/relative-error.ts';

const TINY = { dModel: 32, nLayers: 2, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8, positions: 'grid' as const };

function randomImage(seed: number): RawImage {
  const rng = new Rng(seed, 'image');
  return { width: 16, height: 16, channels: 3, data: Uint8Array.from({ length: 16 * 16 * 3 }, () => rng.int(256)) };
}

let policy: BuiltinPolicy;
let prompts: EncodedPrompt[];

beforeAll(async () => {
  await initBackend('wasm', null);
  policy = BuiltinPolicy.create({ architecture: TINY, seed: 3, lora: { r: 4, alpha: 8 } });
  for (const [i, a] of loraAdapters(policy.lora!).entries())
    a.b.assign(tf.randomNormal(a.b.shape, 0, 0.3, 'float32', 40 + i));
  // Prompts of unequal lengths (padding differs per part), with and without images.
  prompts = [
    policy.encode([
      { type: 'text', text: 'chess\n8/8/8/8/8/8/8/8 w - - 0 1\n' },
      { type: 'image', image: randomImage(1) },
      { type: 'text', text: '\nFINAL ANSWER: ' },
    ]),
    policy.encode([{ type: 'text', text: 'boxes\nno image\nFINAL ANSWER: ' }]),
    policy.encode([
      { type: 'text', text: 'shell\n2\n' },
      { type: 'image', image: randomImage(2) },
      { type: 'image', image: randomImage(3) },
      { type: 'text', text: '\nFINAL ANSWER: ' },
    ]),
  ];
});

describe('the rule', () => {
  it('uses sessions of one thread for --threads N ≥ 2 on the CPU, one session otherwise', () => {
    expect(executorCount(1, 'cpu')).toBe(1);
    expect(executorCount(2, 'cpu')).toBe(2);
    expect(executorCount(3, undefined)).toBe(3);
    expect(executorCount(2, 'cuda')).toBe(1);
    expect(executorCount(2, 'cpu', false)).toBe(1);
  });
});

describe('BuiltinOrtSampler on two cores', () => {
  let single: BuiltinOrtSampler;
  let parallel: BuiltinOrtSampler;
  beforeAll(() => {
    single = new BuiltinOrtSampler(policy, { threads: 1 });
    parallel = new BuiltinOrtSampler(policy, { threads: 2, parallel: 'always' });
  });
  afterAll(() => {
    single.dispose();
    parallel.dispose();
  });

  it('splits the work over two sessions', () => {
    expect(single.executors).toBe(1);
    expect(parallel.executors).toBe(2);
  });

  it("draws the single session's completions for a seed (3 prompts × 4, temperature 0.9, top-p 0.95)", () => {
    const options = { temperature: 0.9, topP: 0.95, maxNewTokens: 40 };
    const one = single.sampleGroups(prompts, 4, options, new Rng(5, 'rollout'));
    const two = parallel.sampleGroups(prompts, 4, options, new Rng(5, 'rollout'));
    expect(two).toEqual(one);
    // Sampled, not degenerate: the completions of a group differ.
    expect(new Set(one[0].map((c) => c.tokens.join())).size).toBeGreaterThan(1);
    expect(one.flat().some((c) => c.tokens.length > 20)).toBe(true);
    // Again after an adapter change (the workers read the new adapters) and with two prompts.
    loraAdapters(policy.lora!)[0].b.assign(
      tf.randomNormal(loraAdapters(policy.lora!)[0].b.shape, 0, 0.5, 'float32', 99),
    );
    single.syncLora();
    parallel.syncLora();
    const a = single.sampleGroups(prompts.slice(1), 3, options, new Rng(6));
    expect(parallel.sampleGroups(prompts.slice(1), 3, options, new Rng(6))).toEqual(a);
    expect(a).not.toEqual(one.slice(1).map((g) => g.slice(0, 3)));
  });

  it('leaves the Rng where the single session does, over rollouts of rows that finish at different steps', () => {
    const options = { temperature: 0.9, topP: 1, maxNewTokens: 30 };
    const [a, b] = [new Rng(21, 'rollout'), new Rng(21, 'rollout')];
    const lengths = new Set<number>();
    for (let round = 0; round < 3; round++) {
      const one = single.sampleGroups(prompts, 3, options, a);
      expect(parallel.sampleGroups(prompts, 3, options, b)).toEqual(one);
      expect(b.state()).toEqual(a.state());
      for (const c of one.flat()) if (c.finished) lengths.add(c.tokens.length);
    }
    // Rows stopped at EOS at several steps (so the parts' draws per step changed during the rollouts).
    expect(lengths.size).toBeGreaterThan(2);
  });

  it('splits over three sessions (a middle part waits on both sides) and draws greedily the same way', () => {
    const three = new BuiltinOrtSampler(policy, { threads: 3, parallel: 'always' });
    try {
      expect(three.executors).toBe(3);
      for (const options of [
        { temperature: 0.8, topP: 0.9, maxNewTokens: 25 },
        { temperature: 0, topP: 1, maxNewTokens: 25 },
      ]) {
        const [a, b] = [new Rng(31), new Rng(31)];
        const one = single.sampleGroups(prompts, 2, options, a);
        expect(three.sampleGroups(prompts, 2, options, b)).toEqual(one);
        expect(b.state()).toEqual(a.state());
        // Greedy draws take no values; sampled ones do.
        if (options.temperature === 0) expect(a.state()).toEqual(new Rng(31).state());
        else expect(a.state()).not.toEqual(new Rng(31).state());
      }
    } finally {
      three.dispose();
    }
  });

  it('scores several batches at once as one session scores each (log-probs and entropies)', () => {
    const rng = new Rng(8, 'completions');
    const V = policy.arch.vocabSize;
    const seq = (p: EncodedPrompt, n: number): SequenceBatchItem => ({
      prompt: p,
      completion: Array.from({ length: n }, () => 3 + rng.int(V - 3)),
    });
    const batches = [
      [seq(prompts[0], 9), seq(prompts[0], 4), seq(prompts[1], 7)],
      [seq(prompts[2], 11)],
      [seq(prompts[1], 1), seq(prompts[2], 5)],
    ];
    for (const useLora of [true, false]) {
      const options = { useLora, withEntropy: true, temperature: 0.7 };
      const many = parallel.tokenLogProbsMany(batches, options);
      batches.forEach((batch, i) => {
        const want = single.tokenLogProbs(batch, options);
        for (const key of ['logProbs', 'mask', 'entropy'] as const) {
          const a = many[i][key]!.dataSync();
          const b = want[key]!.dataSync();
          expect(a.length).toBe(b.length);
          a.forEach((x, j) => expect(Math.abs(x - b[j])).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(b[j]))));
        }
      });
    }
  });
});

describe('BuiltinOrtLearner on two cores', () => {
  it("gives the single session's losses and summed gradients (1e-6) and tfjs autodiff's (1e-4), losses in chunk order", () => {
    const rng = new Rng(12, 'completions');
    const V = policy.arch.vocabSize;
    const seq = (p: EncodedPrompt, n: number): SequenceBatchItem => ({
      prompt: p,
      completion: Array.from({ length: n }, () => 3 + rng.int(V - 3)),
    });
    // Prompt 0's group falls in two chunks, prompt 1's in two that are not adjacent: each runs once a pass.
    const chunks = [
      [seq(prompts[0], 13), seq(prompts[0], 6)],
      [seq(prompts[0], 9), seq(prompts[1], 12)],
      [seq(prompts[2], 8)],
      [seq(prompts[1], 2), seq(prompts[1], 10)],
    ];
    const variables = policy.trainableVariables('lora');
    const options = { useLora: true, withEntropy: true, temperature: 0.8 };
    const order: number[] = [];
    const lossOf =
      (k: number): LogProbLoss =>
      (lp: TokenLogProbs) => {
        order.push(k);
        const [B, L] = lp.logProbs.shape;
        const c = tf.randomNormal([B, L], 0, 1, 'float32', 30 + k);
        const e = tf.randomNormal([B, L], 0, 1, 'float32', 60 + k);
        // Nonlinear in the log-probs (g depends on them); the entropies only checked to be given (the ORT learner
        // differentiates through the log-probs alone, as trainer/loss/loss.ts needs).
        expect(lp.entropy).toBeDefined();
        return tf.sum(tf.mul(lp.mask, tf.add(tf.mul(c, lp.logProbs), tf.mul(e, tf.exp(lp.logProbs))))) as tf.Scalar;
      };
    const requests = () => chunks.map((batch, k) => ({ batch, options, loss: lossOf(k) }));
    const single = new BuiltinOrtLearner(policy, { threads: 1 });
    const parallel = new BuiltinOrtLearner(policy, { threads: 2, parallel: 'always' });
    try {
      const many = parallel.lossGradientsSum(requests(), variables);
      expect(order).toEqual([0, 1, 2, 3]);
      const one = single.lossGradientsSum(requests(), variables);
      expect(relativeError(many.grads, one.grads)).toBeLessThanOrEqual(1e-6);
      // tfjs autodiff chunk by chunk (summedLossGradients' fallback): each chunk's loss, the gradients summed.
      const want = summedLossGradients(policy, requests(), variables);
      chunks.forEach((_, k) => {
        const value = want.values[k].dataSync()[0];
        expect(Math.abs(many.values[k].dataSync()[0] - value)).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(value)));
        expect(Math.abs(many.values[k].dataSync()[0] - one.values[k].dataSync()[0])).toBeLessThanOrEqual(
          1e-6 * Math.max(1, Math.abs(value)),
        );
      });
      expect(relativeError(many.grads, want.grads)).toBeLessThan(1e-4);
    } finally {
      single.dispose();
      parallel.dispose();
    }
  });
});
