// The built-in model on ONNX Runtime's WebGPU provider against its CPU provider: the shipped base with non-zero LoRA
// adapters (r 16, B perturbed), two chess image prompts of the default step. The general graph's logits over a whole
// prompt, greedy and seeded sampled completions (prompts batched, groups of 2, the decode graph), the completion
// log-probs, and the learner's LoRA gradients of a loss of the log-probs for one group. Tolerances: the CPU tests'
// (logits and log-probs within 1e-4, gradients within 1e-4 relative to each variable's largest, draws identical);
// lavapipe's results sit well inside them (docs/engines.md). Needs WebGPU (tests/helpers/webgpu.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { loadBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import { loraAdapters } from '../../models/builtin/lora.ts';
import type { BuiltinPolicy } from '../../models/builtin/policy.ts';
import type { ForwardRequest } from '../../models/onnx/builtin/builtin-session.ts';
import type { Device } from '../../models/onnx/device.ts';
import { BuiltinOrtLearner } from '../../models/onnx/builtin/builtin-learner.ts';
import { BuiltinOrtSampler } from '../../models/onnx/builtin/builtin-sampler.ts';
import { CHECKPOINTS_DIR } from '../../core/paths.ts';
import { getEnv } from '../../envs/registry.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { Rng } from '../../core/rng.ts';
import type { EncodedPrompt, TokenLogProbs } from '../../models/types.ts';
import { WEBGPU_MISSING } from '../helpers/webgpu.ts';

const TOL = 1e-4;
const TOKENS = 24;

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

interface DeviceRun {
  logits: Float32Array;
  greedy: number[][];
  sampled: number[][];
  logp: Float32Array;
  grads: Float32Array[];
}

describe.skipIf(WEBGPU_MISSING !== null)('the built-in model on WebGPU against the CPU', () => {
  let policy: BuiltinPolicy;
  let prompts: EncodedPrompt[];
  const runs: Partial<Record<Device, DeviceRun>> = {};

  beforeAll(async () => {
    await initBackend('wasm', null);
    policy = loadBaseCheckpoint(join(CHECKPOINTS_DIR, 'base'));
    policy.attachLora({ r: 16, alpha: 32 }, new Rng(0, 'lora-init'));
    for (const [i, a] of loraAdapters(policy.lora!).entries())
      a.b.assign(tf.randomUniform(a.b.shape, -0.05, 0.05, 'float32', i));
    const env = await getEnv('chess');
    const episodes = generateEpisodes(env, { n: 2, actions: 5, split: 'train', seed: 0, modality: 'image' });
    prompts = episodes.map((e) => policy.prompt(env, e));
    // The CPU's sampled completions are the sequences both devices score and differentiate.
    let items: { prompt: EncodedPrompt; completion: number[] }[] = [];
    for (const device of ['cpu', 'webgpu'] as const) {
      const sampler = new BuiltinOrtSampler(policy, { device, threads: 1 });
      const padded = (
        sampler as unknown as { padPrompts(p: EncodedPrompt[]): ForwardRequest & { count: number; length: number } }
      ).padPrompts([prompts[0]]);
      const logits = sampler.model.forward({ ...padded, rows: padded.count, seq: padded.length, useLora: true }).logits;
      const greedy = sampler.sampleGroups(
        prompts,
        1,
        { temperature: 0, topP: 1, maxNewTokens: TOKENS },
        new Rng(0, 'g'),
      );
      const sampled = sampler.sampleGroups(
        prompts,
        2,
        { temperature: 0.5, topP: 1, maxNewTokens: TOKENS },
        new Rng(1, 's'),
      );
      if (device === 'cpu')
        items = sampled.flatMap((g, k) => g.map((c) => ({ prompt: prompts[k], completion: c.tokens })));
      const lp = sampler.tokenLogProbs(items, { useLora: true, temperature: 1 });
      sampler.dispose();
      const learner = new BuiltinOrtLearner(policy, { device, threads: 1 });
      const vars = policy.trainableVariables('lora');
      const loss = (x: TokenLogProbs) => tf.sum(tf.mul(x.mask, tf.exp(x.logProbs))) as tf.Scalar;
      const got = learner.lossGradients(items.slice(0, 2), { useLora: true, temperature: 0.5 }, loss, vars);
      learner.dispose();
      runs[device] = {
        logits: logits.slice(),
        greedy: greedy.flat().map((c) => c.tokens),
        sampled: sampled.flat().map((c) => c.tokens),
        logp: (lp.logProbs.mul(lp.mask).dataSync() as Float32Array).slice(),
        grads: vars.map((v) => (got.grads[v.name].dataSync() as Float32Array).slice()),
      };
    }
  }, 300_000);
  afterAll(() => policy?.dispose());

  it("gives the CPU's logits over a whole image prompt within 1e-4", () => {
    expect(maxAbs(runs.webgpu!.logits, runs.cpu!.logits)).toBeLessThan(TOL);
  });

  it('draws the same greedy and seeded completions', () => {
    expect(runs.webgpu!.greedy).toEqual(runs.cpu!.greedy);
    expect(runs.webgpu!.sampled).toEqual(runs.cpu!.sampled);
  });

  it('scores the completions within 1e-4', () => {
    expect(maxAbs(runs.webgpu!.logp, runs.cpu!.logp)).toBeLessThan(TOL);
  });

  it("gives the learner's LoRA gradients within 1e-4 relative", () => {
    runs.webgpu!.grads.forEach((g, i) => {
      const scale = Math.max(1e-30, ...runs.cpu!.grads[i].map(Math.abs));
      expect(maxAbs(g, runs.cpu!.grads[i]) / scale).toBeLessThan(TOL);
    });
  });
});
