// HfOrtSampler (models/onnx/hf/hf-sampler.ts), the Sampler side of Hugging Face checkpoints on ONNX Runtime, against
// the HfPolicy it wraps (the tfjs engine): for the text models (qwen2, qwen3) and the vision-language models
// (idefics3, gemma3, qwen2_5_vl, qwen3_vl: image prompts; while the sampler lives both sides read the features of its
// tower on ONNX Runtime, which tests/models/onnx-siglip.test.ts and onnx-qwen-vl.test.ts check against the
// references; Qwen-VL's multimodal positions and DeepStack go through the ORT decoder), with a non-zero LoRA adapter,
// sampled rollouts of several prompts in groups draw the same tokens from the same Rng (log-probs of the draws within 1e-4), and the no-grad
// completion log-probs and entropies (policy and reference, a temperature) agree within 1e-4; after the adapter
// changes, syncLora makes the session follow. With caches and adapters kept on the device (WebGPU's IO binding path, run here with CPU
// locations) the draws are the host's and the log-probs within 1e-4 of them (the two graphs differ in attention's
// cache: concatenated on the device, read in place on the host).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { HfPolicy } from '../../models/hf/policy.ts';
import { HfOrtSampler } from '../../models/onnx/hf/hf-sampler.ts';
import { Rng } from '../../core/rng.ts';
import type { RawImage } from '../../core/image.ts';
import type { EncodedPrompt, SequenceBatchItem } from '../../models/types.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { loadHfPolicy } from '../../models/registry.ts';

const TOL = 1e-4;

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

function randomImage(seed: number): RawImage {
  const rng = new Rng(seed, 'image');
  return {
    width: 40,
    height: 30,
    channels: 3,
    data: Uint8Array.from({ length: 40 * 30 * 3 }, () => Math.floor(rng.next() * 256)),
  };
}

const maxAbs = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

describe.each(['qwen2', 'qwen3', 'idefics3', 'gemma3', 'qwen2_5_vl', 'qwen3_vl'])(
  'HfOrtSampler vs HfPolicy (tfjs): %s',
  (name) => {
    let policy: HfPolicy;
    let sampler: HfOrtSampler;
    let prompts: EncodedPrompt[];
    beforeAll(async () => {
      policy = await loadHfPolicy(hfCheckpointCopy(name));
      policy.attachLora({ r: 4, alpha: 8 }, new Rng(5, 'lora'));
      let seed = 21;
      for (const v of policy.trainableVariables('lora'))
        v.assign(tf.add(v, tf.randomNormal(v.shape, 0, 0.05, 'float32', seed++)));
      sampler = new HfOrtSampler(policy, { threads: 1 });
      const image = name !== 'qwen2' && name !== 'qwen3';
      prompts = [
        policy.encode([
          { type: 'text', text: 'Which move wins? ' },
          ...(image ? [{ type: 'image' as const, image: randomImage(1) }] : []),
        ]),
        policy.encode([{ type: 'text', text: 'List the files.' }]),
      ];
    });
    afterAll(() => {
      sampler.dispose();
      policy.dispose();
    });

    it('draws the same completions for a seed (prompts batched, groups of 3, cached decoding)', () => {
      const options = { maxNewTokens: 7, temperature: 1, topP: 1 };
      const expected = policy.sampleGroups(prompts, 3, options, new Rng(9, 'sample'));
      const got = sampler.sampleGroups(prompts, 3, options, new Rng(9, 'sample'));
      expect(got.flat().map((c) => [c.tokens, c.text, c.finished])).toEqual(
        expected.flat().map((c) => [c.tokens, c.text, c.finished]),
      );
      const d = Math.max(...got.flat().map((c, i) => maxAbs(c.logProbs, expected.flat()[i].logProbs)));
      console.log(name, 'sample log-prob diff', d);
      expect(d).toBeLessThan(TOL);
    });

    it('gives the same completion log-probs and entropies, with and without the adapter, at a temperature', () => {
      const completions = policy.sampleGroups(
        prompts,
        2,
        { maxNewTokens: 6, temperature: 1, topP: 1 },
        new Rng(4, 'sample'),
      );
      const items: SequenceBatchItem[] = completions.flatMap((group, k) =>
        group.map((c) => ({ prompt: prompts[k], completion: c.tokens })),
      );
      items.push({ prompt: prompts[1], completion: [] });
      const diffs: Record<string, number> = {};
      for (const useLora of [true, false]) {
        const options = { useLora, withEntropy: true, temperature: 0.8 };
        const e = policy.tokenLogProbs(items, options);
        const g = sampler.tokenLogProbs(items, options);
        expect(g.mask.dataSync()).toEqual(e.mask.dataSync());
        // One completion per scoring run (the chunked path) gives the same numbers.
        const oneByOne = new HfOrtSampler(policy, { threads: 1, logitBudget: 1 });
        const chunked = oneByOne.tokenLogProbs(items, options);
        oneByOne.dispose();
        expect(chunked.logProbs.dataSync()).toEqual(g.logProbs.dataSync());
        expect(chunked.entropy!.dataSync()).toEqual(g.entropy!.dataSync());
        tf.dispose([chunked.logProbs, chunked.mask, chunked.entropy!]);
        diffs[useLora ? 'lora' : 'base'] = Math.max(
          maxAbs(g.logProbs.dataSync() as Float32Array, e.logProbs.dataSync() as Float32Array),
          maxAbs(g.entropy!.dataSync() as Float32Array, e.entropy!.dataSync() as Float32Array),
        );
        tf.dispose([e.logProbs, e.mask, e.entropy!, g.logProbs, g.mask, g.entropy!]);
      }
      console.log(name, 'log-prob diffs', diffs);
      expect(diffs.lora).toBeLessThan(TOL);
      expect(diffs.base).toBeLessThan(TOL);
    });

    it('follows the learner after syncLora', () => {
      const items: SequenceBatchItem[] = [{ prompt: prompts[1], completion: [5, 6, 7, 8] }];
      const before = sampler.tokenLogProbs(items, { useLora: true }).logProbs.dataSync() as Float32Array;
      for (const v of policy.trainableVariables('lora')) v.assign(tf.mul(v, 1.5));
      const stale = sampler.tokenLogProbs(items, { useLora: true }).logProbs.dataSync() as Float32Array;
      sampler.syncLora();
      const synced = sampler.tokenLogProbs(items, { useLora: true }).logProbs.dataSync() as Float32Array;
      const tfjs = policy.tokenLogProbs(items, { useLora: true }).logProbs.dataSync() as Float32Array;
      expect(maxAbs(stale, before)).toBe(0);
      expect(maxAbs(synced, tfjs)).toBeLessThan(TOL);
      expect(maxAbs(synced, before)).toBeGreaterThan(1e-3);
    });

    it('gives the same draws and scores with caches and adapters kept on the device (IO binding; CPU locations here)', () => {
      const kept = new HfOrtSampler(policy, { threads: 1, keepOnDevice: true });
      try {
        const options = { maxNewTokens: 6, temperature: 1, topP: 1 };
        const draw = (s: HfOrtSampler) => s.sampleGroups(prompts, 3, options, new Rng(12, 'sample')).flat();
        const expected = draw(sampler);
        const got = draw(kept);
        expect(got.map((c) => c.tokens)).toEqual(expected.map((c) => c.tokens));
        expect(Math.max(...got.map((c, i) => maxAbs(c.logProbs, expected[i].logProbs)))).toBeLessThan(TOL);
        const items: SequenceBatchItem[] = expected.map((c, i) => ({
          prompt: prompts[Math.floor(i / 3)],
          completion: c.tokens,
        }));
        // After an update the kept adapters are uploaded again (and the old ones freed: a stale one would fail the run).
        for (const v of policy.trainableVariables('lora')) v.assign(tf.mul(v, 0.8));
        sampler.syncLora();
        kept.syncLora();
        for (const useLora of [true, false]) {
          const e = sampler.tokenLogProbs(items, { useLora, withEntropy: true });
          const g = kept.tokenLogProbs(items, { useLora, withEntropy: true });
          expect(maxAbs(g.logProbs.dataSync() as Float32Array, e.logProbs.dataSync() as Float32Array)).toBeLessThan(
            TOL,
          );
          expect(maxAbs(g.entropy!.dataSync() as Float32Array, e.entropy!.dataSync() as Float32Array)).toBeLessThan(
            TOL,
          );
          expect(g.mask.dataSync()).toEqual(e.mask.dataSync());
          tf.dispose([e.logProbs, e.mask, e.entropy!, g.logProbs, g.mask, g.entropy!]);
        }
      } finally {
        kept.dispose();
      }
    });
  },
);
