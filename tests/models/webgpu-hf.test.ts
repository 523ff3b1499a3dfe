// The Hugging Face checkpoints on ONNX Runtime's WebGPU provider against its CPU provider, on every fixture of
// ../shared/fixtures/hf that the ORT engine runs: Llama, its bfloat16 copy (stored float16 on WebGPU: weight-dtype.ts),
// Qwen2, and Gemma 3 and Idefics3 under an image prompt (their SigLIP towers on the device too). With a non-zero
// adapter: the sampler's completion log-probs and entropies, a seeded rollout (prompts batched, groups of 3: the KV
// caches and adapters stay on the GPU between steps, device-tensors.ts), the log-probs after an adapter update
// (the adapters uploaded again), and the learner's loss and LoRA gradients at a temperature and at a low one (logits
// of several hundred after 1/T: WebGPU's own ReduceLogSumExp overflows there, portable-ops.ts). Tolerances: those of
// the CPU tests, log-probs within 1e-4 and gradients within 1e-4 relative to each variable's largest, draws
// identical; measured on lavapipe (Mesa 25.0.7, a CPU Vulkan driver) they are well inside (docs/engines.md).
// Needs WebGPU (tests/helpers/webgpu.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import type { Device } from '../../models/onnx/device.ts';
import { HfOrtLearner } from '../../models/onnx/hf/hf-learner.ts';
import { HfOrtSampler } from '../../models/onnx/hf/hf-sampler.ts';
import { Rng } from '../../core/rng.ts';
import type { RawImage } from '../../core/image.ts';
import type { LogProbLoss } from '../../models/learner.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs } from '../../models/types.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { WEBGPU_MISSING } from '../helpers/webgpu.ts';
import { loadHfPolicy } from '../../models/registry.ts';

const TOL = 1e-4;

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

function image(seed: number): RawImage {
  const rng = new Rng(seed, 'image');
  return { width: 40, height: 30, channels: 3, data: Uint8Array.from({ length: 3600 }, () => rng.int(256)) };
}

/** A loss nonlinear in the log-probs (so g depends on them), masked like the GRPO loss. */
const loss: LogProbLoss = (lp: TokenLogProbs) =>
  tf.sum(tf.mul(lp.mask, tf.add(lp.logProbs, tf.mul(tf.scalar(0.5), tf.exp(lp.logProbs))))) as tf.Scalar;

const flat = (lp: TokenLogProbs) => (lp.logProbs.mul(lp.mask).dataSync() as Float32Array).slice();
const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

interface DeviceRun {
  logp: Float32Array;
  entropy: Float32Array;
  draws: { tokens: number[]; logProbs: number[] }[];
  updated: Float32Array;
  learner: { temperature: number; loss: number; grads: Float32Array[] }[];
}

describe.skipIf(WEBGPU_MISSING !== null).each(['llama', 'llama-bf16', 'qwen2', 'qwen3', 'gemma3', 'idefics3'])(
  'WebGPU against the CPU: %s',
  (name) => {
    const runs: Partial<Record<Device, DeviceRun>> = {};

    beforeAll(async () => {
      for (const device of ['cpu', 'webgpu'] as const) {
        // A fresh policy per device, the same seeds: the adapter update below changes the variables.
        const policy = await loadHfPolicy(hfCheckpointCopy(name), { hostWeights: true });
        policy.attachLora({ r: 4, alpha: 8 }, new Rng(5, 'lora'));
        let seed = 21;
        for (const v of policy.trainableVariables('lora'))
          v.assign(tf.add(v, tf.randomNormal(v.shape, 0, 0.05, 'float32', seed++)));
        const sampler = new HfOrtSampler(policy, { device, threads: 1 });
        const vlm = policy.image !== null;
        const prompts: EncodedPrompt[] = [
          policy.encode([
            { type: 'text', text: 'Which cup? ' },
            ...(vlm ? [{ type: 'image' as const, image: image(1) }] : []),
          ]),
          policy.encode([{ type: 'text', text: 'List the files.' }]),
        ];
        const rng = new Rng(11, 'completions');
        const V = policy.decoder.config.vocabSize;
        const items: SequenceBatchItem[] = [6, 4, 1].map((n, i) => ({
          prompt: prompts[i % 2],
          completion: Array.from({ length: n }, () => 3 + rng.int(V - 3)),
        }));
        const scored = sampler.tokenLogProbs(items, { useLora: true, withEntropy: true, temperature: 0.8 });
        const draws = sampler
          .sampleGroups(prompts, 3, { maxNewTokens: 6, temperature: 1, topP: 1 }, new Rng(9, 'draw'))
          .flat()
          .map((c) => ({ tokens: c.tokens, logProbs: Array.from(c.logProbs) }));
        for (const v of policy.trainableVariables('lora')) v.assign(tf.mul(v, 1.5));
        sampler.syncLora();
        const updated = flat(sampler.tokenLogProbs(items, { useLora: true }));
        const learner = new HfOrtLearner(policy, { device, threads: 1 });
        const vars = policy.decoder.loraVariables();
        const learned = [0.8, 0.02].map((temperature) => {
          const { values, grads } = learner.lossGradientsSum(
            [{ batch: items, options: { useLora: true, temperature }, loss }],
            vars,
          );
          return {
            temperature,
            loss: (values[0] as unknown as tf.Tensor).dataSync()[0],
            grads: vars.map((v) => (grads[v.name].dataSync() as Float32Array).slice()),
          };
        });
        learner.dispose();
        sampler.dispose();
        policy.dispose();
        runs[device] = {
          logp: flat(scored),
          entropy: (scored.entropy!.mul(scored.mask).dataSync() as Float32Array).slice(),
          draws,
          updated,
          learner: learned,
        };
      }
    }, 300_000);

    it('scores completions as the CPU does: log-probs and entropies within 1e-4', () => {
      expect(maxAbs(runs.webgpu!.logp, runs.cpu!.logp)).toBeLessThan(TOL);
      expect(maxAbs(runs.webgpu!.entropy, runs.cpu!.entropy)).toBeLessThan(TOL);
    });

    it('draws the same tokens for a seed, caches and adapters kept on the GPU', () => {
      const { cpu, webgpu } = runs;
      expect(webgpu!.draws.map((d) => d.tokens)).toEqual(cpu!.draws.map((d) => d.tokens));
      webgpu!.draws.forEach((d, i) => expect(maxAbs(d.logProbs, cpu!.draws[i].logProbs)).toBeLessThan(TOL));
    });

    it('follows an adapter update (uploaded again) as the CPU does', () => {
      expect(maxAbs(runs.webgpu!.updated, runs.cpu!.updated)).toBeLessThan(TOL);
      expect(maxAbs(runs.webgpu!.updated, runs.webgpu!.logp)).toBeGreaterThan(1e-3);
    });

    it("gives the learner's loss and LoRA gradients of the CPU, at T = 0.8 and at T = 0.02", () => {
      runs.webgpu!.learner.forEach((got, k) => {
        const want = runs.cpu!.learner[k];
        expect(Number.isFinite(got.loss), `T = ${got.temperature}`).toBe(true);
        expect(Math.abs(got.loss - want.loss)).toBeLessThan(TOL * Math.max(1, Math.abs(want.loss)));
        got.grads.forEach((g, i) => {
          const scale = Math.max(1e-30, ...want.grads[i].map(Math.abs));
          expect(maxAbs(g, want.grads[i]) / scale, `T = ${got.temperature}, variable ${i}`).toBeLessThan(TOL);
        });
      });
    });
  },
);
