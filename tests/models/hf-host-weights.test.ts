// A Hugging Face checkpoint loaded for ONNX Runtime (HfPolicy.load's hostWeights, what --engine ort uses): its weights
// sit on tfjs's CPU backend (host arrays) rather than in the WASM heap, and stay there through a whole ORT step —
// rollouts, scoring and the learner's gradients — because the only tfjs op that read them, the embedding lookup,
// gathers rows in TypeScript. Its embeddings equal the WASM-held model's (Gemma's sqrt(H) scaling included), and the
// ORT learner's gradients are the same either way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { HfPolicy } from '../../models/hf/policy.ts';
import { HfOrtLearner } from '../../models/onnx/hf/hf-learner.ts';
import { HfOrtSampler } from '../../models/onnx/hf/hf-sampler.ts';
import { Rng } from '../../core/rng.ts';
import type { TokenLogProbs } from '../../models/types.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { relativeError } from '../helpers/relative-error.ts';
import { loadHfPolicy } from '../../models/registry.ts';

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

/** The backend that holds a tensor's data (tfjs moves data between backends on use). */
const backendOf = (t: tf.Tensor): string => {
  const info = (
    tf.engine() as unknown as { state: { tensorInfo: WeakMap<object, { backend: unknown }> } }
  ).state.tensorInfo.get(t.dataId);
  return info?.backend === tf.findBackend('cpu') ? 'cpu' : info?.backend === tf.findBackend('wasm') ? 'wasm' : 'other';
};

describe.each(['llama', 'gemma3'])('host-held weights: %s', (name) => {
  let host: HfPolicy;
  let heap: HfPolicy;
  beforeAll(async () => {
    const dir = hfCheckpointCopy(name);
    host = await loadHfPolicy(dir, { hostWeights: true });
    heap = await loadHfPolicy(dir);
  });
  afterAll(() => {
    host.dispose();
    heap.dispose();
  });

  it('holds the decoder on the CPU backend and leaves the active backend as it was', () => {
    expect(tf.getBackend()).toBe('wasm');
    expect(host.decoder.baseVariables().every((v) => backendOf(v) === 'cpu')).toBe(true);
    expect(heap.decoder.baseVariables().every((v) => backendOf(v) === 'wasm')).toBe(true);
  });

  it('embeds as the WASM-held model does', () => {
    const ids = [
      [1, 5, 17, 200],
      [3, 3, 9, 0],
    ];
    const a = host.decoder.embed(ids);
    const b = heap.decoder.embed(ids);
    expect(Array.from(a.dataSync())).toEqual(Array.from(b.dataSync()));
    tf.dispose([a, b]);
  });

  it('runs an ORT rollout and learner pass without moving the weights, with the same gradients', () => {
    for (const p of [host, heap]) p.attachLora({ r: 2, alpha: 4 }, new Rng(3, 'lora'));
    let seed = 9;
    const hv = host.trainableVariables('lora');
    const wv = heap.trainableVariables('lora');
    hv.forEach((v, i) => {
      const value = tf.randomNormal(v.shape, 0, 0.1, 'float32', seed++);
      v.assign(value);
      wv[i].assign(value);
      value.dispose();
    });
    const sampler = new HfOrtSampler(host, { threads: 1 });
    const prompt = host.encode([{ type: 'text', text: 'Where is the ball?' }]);
    const [group] = sampler.sampleGroups(
      [prompt],
      3,
      { maxNewTokens: 5, temperature: 1, topP: 1 },
      new Rng(2, 'sample'),
    );
    sampler.dispose();
    const loss = (lp: TokenLogProbs) => tf.sum(tf.mul(lp.mask, tf.exp(lp.logProbs))) as tf.Scalar;
    const options = { useLora: true, temperature: 1 };
    const run = (p: HfPolicy) => {
      const learner = new HfOrtLearner(p, { threads: 1 });
      const items = group.map((c) => ({ prompt, completion: c.tokens }));
      const out = learner.lossGradients(items, options, loss, p.trainableVariables('lora'));
      learner.dispose();
      return out;
    };
    const a = run(host);
    const b = run(heap);
    // Gradients keyed by each policy's own variable names: compare in order.
    const named = (g: tf.NamedTensorMap, vars: tf.Variable[]) =>
      Object.fromEntries(vars.map((v, i) => [`v${i}`, g[v.name]]));
    expect(relativeError(named(a.grads, hv), named(b.grads, wv))).toBeLessThan(1e-5);
    expect(host.decoder.baseVariables().every((v) => backendOf(v) === 'cpu')).toBe(true);
    tf.dispose([a.value, b.value, ...Object.values(a.grads), ...Object.values(b.grads)]);
  });
});
