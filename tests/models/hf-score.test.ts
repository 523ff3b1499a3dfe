// Completion log-probabilities (the learner's pass) against fixtures/hf/llama-lora's reference logits: prompts of
// different lengths right-aligned, completions of different lengths, temperature, entropy, LoRA on and off, and the
// same values and gradients with recomputed blocks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { readHfLanguageModel, type LoadedHfModel } from '../../models/hf/load-decoder.ts';
import { loadPeftAdapter } from '../../models/hf/peft.ts';
import { completionLogProbs } from '../../models/hf/score.ts';
import { FIXTURES, TOL, readReference } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

let m: LoadedHfModel;
beforeAll(async () => {
  await initBackend('wasm', null);
  m = readHfLanguageModel(join(FIXTURES, 'llama'), HF_ARCHITECTURES);
  loadPeftAdapter(m.decoder, join(FIXTURES, 'llama-lora'));
});
afterAll(() => m?.decoder.dispose());

/** log softmax(row / temperature)[token] and the entropy, from reference logits [T, V]. */
function expected(logits: Float32Array, row: number, token: number, temperature = 1): { lp: number; h: number } {
  const x = Array.from(logits.subarray(row * 256, (row + 1) * 256), (v) => v / temperature);
  const max = Math.max(...x);
  const lse = max + Math.log(x.reduce((s, v) => s + Math.exp(v - max), 0));
  const h = -x.reduce((s, v) => s + Math.exp(v - lse) * (v - lse), 0);
  return { lp: x[token] - lse, h };
}

describe('completionLogProbs', () => {
  it('matches the reference logits for mixed prompt and completion lengths, with temperature and entropy', () => {
    const lora = readReference('llama-lora');
    const s0: number[] = lora.json.single0.input_ids[0];
    const s1: number[] = lora.json.single1.input_ids[0];
    const items = [
      { prompt: s0.slice(0, 5), completion: s0.slice(5) },
      { prompt: s1.slice(0, 3), completion: s1.slice(3) },
    ];
    for (const temperature of [1, 0.7]) {
      const r = completionLogProbs(m.decoder, items, { withEntropy: true, temperature });
      const [lp, mask, ent] = [r.logProbs.arraySync(), r.mask.arraySync(), r.entropy!.arraySync()];
      [r.logProbs, r.mask, r.entropy!].forEach((t) => t.dispose());
      expect(mask).toEqual([
        [1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 0, 0, 0],
      ]);
      let worst = 0;
      items.forEach((it, b) => {
        const ref = lora.get(`single${b}.logits`).data;
        it.completion.forEach((tok, j) => {
          const e = expected(ref, it.prompt.length - 1 + j, tok, temperature);
          worst = Math.max(worst, Math.abs(lp[b][j] - e.lp), Math.abs(ent[b][j] - e.h));
        });
      });
      expect(Math.abs(lp[1][5])).toBe(0);
      expect(worst).toBeLessThan(TOL);
    }
  });

  it('gives the base model with LoRA off, and equal gradients with recomputed blocks', () => {
    const base = readReference('llama');
    const s0: number[] = base.json.single0.input_ids[0];
    const items = [
      { prompt: s0.slice(0, 8), completion: s0.slice(8) },
      { prompt: s0.slice(0, 2), completion: s0.slice(2, 6) },
    ];
    const off = completionLogProbs(m.decoder, items, { useLora: false });
    const lp = off.logProbs.arraySync();
    tf.dispose([off.logProbs, off.mask]);
    const ref = base.get('single0.logits').data;
    expect(Math.abs(lp[0][2] - expected(ref, 9, s0[10]).lp)).toBeLessThan(TOL);
    expect(Math.abs(lp[1][3] - expected(ref, 4, s0[5]).lp)).toBeLessThan(TOL);
    const vars = m.decoder.loraVariables();
    const loss = (recompute: boolean) => () => {
      const r = completionLogProbs(m.decoder, items, { recompute });
      tf.dispose(r.mask);
      return tf.neg(tf.sum(r.logProbs)) as tf.Scalar;
    };
    const a = tf.variableGrads(loss(false), vars);
    const b = tf.variableGrads(loss(true), vars);
    const worst = Math.max(
      ...vars.map((v) => tf.tidy(() => tf.max(tf.abs(tf.sub(a.grads[v.name], b.grads[v.name]))).dataSync()[0])),
    );
    const scale = Math.max(...vars.map((v) => tf.tidy(() => tf.max(tf.abs(a.grads[v.name])).dataSync()[0])));
    tf.dispose([a.value, b.value, ...Object.values(a.grads), ...Object.values(b.grads)]);
    expect(scale).toBeGreaterThan(1e-3);
    expect(worst).toBeLessThan(1e-5 * Math.max(1, scale));
  });

  it('has the gradient of the plain formula (log-softmax times one-hot targets)', () => {
    const s0: number[] = readReference('llama').json.single0.input_ids[0];
    const vars = m.decoder.loraVariables();
    const ours = tf.variableGrads(() => {
      const r = completionLogProbs(m.decoder, [{ prompt: s0.slice(0, 8), completion: s0.slice(8) }]);
      tf.dispose(r.mask);
      return tf.neg(tf.sum(r.logProbs)) as tf.Scalar;
    }, vars);
    const plain = tf.variableGrads(() => {
      const logits = tf.reshape(m.decoder.forward({ ids: [s0], logitsFrom: 7 }).logits!, [5, 256]);
      const targets = tf.oneHot(tf.tensor1d([...s0.slice(8), 0], 'int32'), 256);
      const rowMask = tf.tensor2d([1, 1, 1, 1, 0], [5, 1]);
      return tf.neg(tf.sum(tf.mul(tf.mul(tf.logSoftmax(logits), targets), rowMask))) as tf.Scalar;
    }, vars);
    expect(Math.abs(ours.value.dataSync()[0] - plain.value.dataSync()[0])).toBeLessThan(TOL);
    const worst = Math.max(
      ...vars.map((v) => tf.tidy(() => tf.max(tf.abs(tf.sub(ours.grads[v.name], plain.grads[v.name]))).dataSync()[0])),
    );
    tf.dispose([ours.value, plain.value, ...Object.values(ours.grads), ...Object.values(plain.grads)]);
    expect(worst).toBeLessThan(TOL);
  });
});
