// The built-in model on ONNX Runtime (models/onnx/) against its tfjs execution (models/builtin/), the reference that
// the PyTorch peer checks in turn (../shared/peers/torch_check.py): logits within 1e-4 with and without LoRA, LoRA
// inputs moving the logits as tfjs LoRA does (and zero B giving the base exactly), KV-cache decoding equal to a full
// recompute, greedy ids identical, sampled draws identical for one seed, no-grad log-probs and (unpadded) entropies at
// a temperature within 1e-4; on a tiny random model and on the shipped base (checkpoints/base) with a real chess prompt.
import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { loadBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import { loraAdapters } from '../../models/builtin/lora.ts';
import { BuiltinOrtSampler } from '../../models/onnx/builtin/builtin-sampler.ts';
import type { ForwardRequest } from '../../models/onnx/builtin/builtin-session.ts';
import { CHECKPOINTS_DIR } from '../../core/paths.ts';
import { getEnv } from '../../envs/registry.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { Rng } from '../../core/rng.ts';
import type { RawImage } from '../../core/image.ts';
import type { Completion, EncodedPrompt } from '../../models/types.ts';

const TINY = { dModel: 32, nLayers: 2, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8, positions: 'grid' as const };

function randomImage(seed: number): RawImage {
  const rng = new Rng(seed, 'image');
  return { width: 16, height: 16, channels: 3, data: Uint8Array.from({ length: 16 * 16 * 3 }, () => rng.int(256)) };
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

/** Logits at every position of one prompt, through the ORT session (one prefill: the full forward). */
function ortLogits(sampler: BuiltinOrtSampler, prompt: EncodedPrompt, useLora: boolean): Float32Array {
  // The padded prompt as the sampler lays it out, run through its model's forward (the sampler's own prefill wrapper
  // went with the lint's dead-code pass).
  const s = sampler as unknown as {
    padPrompts(p: EncodedPrompt[]): Pick<ForwardRequest, 'tokens' | 'positions' | 'slots'> & {
      count: number;
      length: number;
    };
  };
  const padded = s.padPrompts([prompt]);
  return sampler.model.forward({ ...padded, rows: padded.count, seq: padded.length, useLora }).logits;
}

const tokensOf = (groups: Completion[][]) => groups.map((g) => g.map((c) => c.tokens));

describe('ONNX Runtime engine, tiny random model (grid positions, two images, LoRA)', () => {
  let policy: BuiltinPolicy;
  let sampler: BuiltinOrtSampler;
  let prompt: EncodedPrompt;
  let other: EncodedPrompt;

  beforeAll(async () => {
    await initBackend('wasm', null);
    policy = BuiltinPolicy.create({ architecture: TINY, seed: 7, lora: { r: 4, alpha: 8 } });
    for (const [i, a] of loraAdapters(policy.lora!).entries())
      a.b.assign(tf.randomNormal(a.b.shape, 0, 0.3, 'float32', 1 + i));
    prompt = policy.encode([
      { type: 'text', text: 'chess\n8/8/8/8/8/8/8/8 w - - 0 1\n' },
      { type: 'image', image: randomImage(1) },
      { type: 'text', text: '\ne2e4\n' },
      { type: 'image', image: randomImage(2) },
      { type: 'text', text: '\ntrace\nFINAL ANSWER: ' },
    ]);
    other = policy.encode([
      { type: 'text', text: 'shell\n2\n' },
      { type: 'image', image: randomImage(3) },
      { type: 'text', text: '\nFINAL ANSWER: ' },
    ]);
    sampler = new BuiltinOrtSampler(policy, { threads: 1 });
  });

  it('gives the tfjs logits at every position, with and without LoRA, and LoRA moves them as in tfjs', () => {
    const withLora = policy.sequenceLogits(prompt, true).dataSync();
    const base = policy.sequenceLogits(prompt, false).dataSync();
    const ortWith = ortLogits(sampler, prompt, true);
    const ortBase = ortLogits(sampler, prompt, false);
    expect(maxDiff(ortWith, withLora)).toBeLessThan(1e-4);
    expect(maxDiff(ortBase, base)).toBeLessThan(1e-4);
    // The adapters matter here (else the first two checks would say nothing about LoRA).
    expect(maxDiff(withLora, base)).toBeGreaterThan(0.05);
    const delta = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a, (x, i) => x - b[i]);
    expect(maxDiff(delta(ortWith, ortBase), delta(withLora, base))).toBeLessThan(1e-4);
  });

  it('handles adapters on some projections only (q, v, up: zero blocks in the joined q/k/v pair)', () => {
    const partial = BuiltinPolicy.create({
      architecture: TINY,
      seed: 3,
      lora: { r: 2, alpha: 6, targetModules: ['q_proj', 'v_proj', 'up_proj'] },
    });
    for (const [i, a] of loraAdapters(partial.lora!).entries())
      a.b.assign(tf.randomNormal(a.b.shape, 0, 0.3, 'float32', 20 + i));
    const ort = new BuiltinOrtSampler(partial, { threads: 1 });
    try {
      expect(maxDiff(ortLogits(ort, prompt, true), partial.sequenceLogits(prompt, true).dataSync())).toBeLessThan(1e-4);
      expect(maxDiff(ortLogits(ort, prompt, false), partial.sequenceLogits(prompt, false).dataSync())).toBeLessThan(
        1e-4,
      );
    } finally {
      ort.dispose();
      partial.dispose();
    }
  });

  it('follows a LoRA update after syncLora without a new session', () => {
    const a = loraAdapters(policy.lora!)[3];
    const saved = a.b.clone();
    a.b.assign(tf.add(a.b, 0.5));
    try {
      expect(maxDiff(ortLogits(sampler, prompt, true), policy.sequenceLogits(prompt, true).dataSync())).toBeGreaterThan(
        1e-3,
      );
      sampler.syncLora();
      expect(maxDiff(ortLogits(sampler, prompt, true), policy.sequenceLogits(prompt, true).dataSync())).toBeLessThan(
        1e-4,
      );
    } finally {
      a.b.assign(saved);
      sampler.syncLora();
    }
  });

  it('decodes greedily the tfjs ids, with log-probs equal to a full recompute of prompt + completion', () => {
    const options = { temperature: 0, topP: 1, maxNewTokens: 40 };
    const viaTfjs = policy.sampleGroups([prompt, other], 2, options, new Rng(1));
    const viaOrt = sampler.sampleGroups([prompt, other], 2, options, new Rng(1));
    expect(tokensOf(viaOrt)).toEqual(tokensOf(viaTfjs));
    expect(maxDiff(viaOrt[0][0].logProbs, viaTfjs[0][0].logProbs)).toBeLessThan(1e-4);
    // Full recompute: the prompt followed by the completion in one pass, log-softmax at each completion token.
    const completion = viaOrt[1][1].tokens;
    const V = policy.arch.vocabSize;
    const full = ortLogits(sampler, { tokens: [...other.tokens, ...completion], images: other.images }, true);
    const recomputed = completion.map((t, j) => {
      const row = full.subarray((other.tokens.length - 1 + j) * V, (other.tokens.length + j) * V);
      const max = Math.max(...row);
      return row[t] - max - Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
    });
    expect(maxDiff(viaOrt[1][1].logProbs, recomputed)).toBeLessThan(1e-4);
  });

  it('draws the same sampled completions as tfjs for one seed (temperature 0.7, top-p 0.9)', () => {
    const options = { temperature: 0.7, topP: 0.9, maxNewTokens: 30 };
    const viaTfjs = policy.sampleGroups([prompt, other], 3, options, new Rng(5, 'draws'));
    const viaOrt = sampler.sampleGroups([prompt, other], 3, options, new Rng(5, 'draws'));
    expect(tokensOf(viaOrt)).toEqual(tokensOf(viaTfjs));
    expect(new Set(viaOrt[0].map((c) => c.tokens.join(','))).size).toBeGreaterThan(1);
  });

  it('keeps its own-cache buffers and decode mask across rollouts without carrying anything over', () => {
    // A longer, wider rollout first (its caches grow past several 16-position chunks and stay in the buffers), then a
    // smaller one: equal to the same smaller rollout on a fresh sampler, and to tfjs.
    const options = { temperature: 0.9, topP: 1, maxNewTokens: 45 };
    sampler.sampleGroups([prompt, other], 3, options, new Rng(21));
    const small = { temperature: 0.9, topP: 1, maxNewTokens: 20 };
    const reused = sampler.sampleGroups([other], 2, small, new Rng(22));
    const fresh = new BuiltinOrtSampler(policy, { threads: 1 });
    try {
      const first = fresh.sampleGroups([other], 2, small, new Rng(22));
      expect(tokensOf(reused)).toEqual(tokensOf(first));
      reused.flat().forEach((c, i) => expect(Array.from(c.logProbs)).toEqual(Array.from(first.flat()[i].logProbs)));
      expect(tokensOf(reused)).toEqual(tokensOf(policy.sampleGroups([other], 2, small, new Rng(22))));
    } finally {
      fresh.dispose();
    }
  });

  it('scores completions (no grad) as tfjs tokenLogProbs does: log-probs, entropies and mask at T = 0.5', () => {
    const completions = sampler.sampleGroups(
      [prompt, other],
      2,
      { temperature: 1, topP: 1, maxNewTokens: 25 },
      new Rng(9),
    );
    const items = completions.flatMap((g, u) => g.map((c) => ({ prompt: [prompt, other][u], completion: c.tokens })));
    items.push({ prompt, completion: items[0].completion.slice(0, 3) }); // a short one: padding
    for (const useLora of [true, false]) {
      const want = policy.tokenLogProbs(items, { useLora, withEntropy: true, temperature: 0.5 });
      const got = sampler.tokenLogProbs(items, { useLora, withEntropy: true, temperature: 0.5 });
      expect(got.logProbs.shape).toEqual(want.logProbs.shape);
      expect(Array.from(got.mask.dataSync())).toEqual(Array.from(want.mask.dataSync()));
      expect(maxDiff(got.logProbs.dataSync(), want.logProbs.dataSync())).toBeLessThan(1e-4);
      // Entropies where the mask is 1 (tfjs also fills padding with the entropy of padded rows; nothing reads it).
      const m = want.mask.dataSync();
      expect(
        maxDiff(
          Array.from(got.entropy!.dataSync(), (x, i) => x * m[i]),
          Array.from(want.entropy!.dataSync(), (x, i) => x * m[i]),
        ),
      ).toBeLessThan(1e-4);
      tf.dispose([want.logProbs, want.mask, want.entropy!, got.logProbs, got.mask, got.entropy!]);
    }
  });
});

const shipped = join(CHECKPOINTS_DIR, 'base');
describe.runIf(existsSync(join(shipped, 'model.safetensors')))(
  'ONNX Runtime engine, shipped base on a chess image prompt',
  () => {
    let policy: BuiltinPolicy;
    let sampler: BuiltinOrtSampler;
    let prompts: EncodedPrompt[];

    beforeAll(async () => {
      await initBackend('wasm', null);
      policy = loadBaseCheckpoint(shipped);
      policy.attachLora({ r: 16, alpha: 32 }, new Rng(7, 'lora'));
      for (const [i, a] of loraAdapters(policy.lora!).entries())
        a.b.assign(tf.randomUniform(a.b.shape, -0.05, 0.05, 'float32', 11 + i));
      const env = await getEnv('chess');
      prompts = generateEpisodes(env, { n: 2, actions: 5, split: 'train', seed: 0, modality: 'image' }).map((e) =>
        policy.prompt(env, e),
      );
      sampler = new BuiltinOrtSampler(policy, { threads: 2 });
    });

    it('gives the tfjs logits (1e-4) with and without LoRA', () => {
      expect(prompts[0].images.length).toBe(5);
      for (const useLora of [true, false]) {
        expect(
          maxDiff(ortLogits(sampler, prompts[0], useLora), policy.sequenceLogits(prompts[0], useLora).dataSync()),
        ).toBeLessThan(1e-4);
      }
    });

    it('decodes the tfjs greedy ids for two prompts × 2', () => {
      const options = { temperature: 0, topP: 1, maxNewTokens: 120 };
      const viaTfjs = policy.sampleGroups(prompts, 2, options, new Rng(1));
      const viaOrt = sampler.sampleGroups(prompts, 2, options, new Rng(1));
      expect(tokensOf(viaOrt)).toEqual(tokensOf(viaTfjs));
      expect(viaOrt[0][0].tokens.length).toBeGreaterThan(50);
      expect(maxDiff(viaOrt[1][0].logProbs, viaTfjs[1][0].logProbs)).toBeLessThan(1e-4);
    });
  },
);
