// The checkpoint writer: a loaded fixture written back gives its on-disk tensors bit for bit (names, [out, in]
// layouts, tied heads left out), and a random-weight Llama written from a config object loads, decodes with its KV
// cache exactly as by full recomputation, and takes a LoRA adapter through save and load.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { readHfLanguageModel } from '../../models/hf/load-decoder.ts';
import { generate } from '../../models/hf/generate.ts';
import { createLora, loadPeftAdapter, savePeftAdapter } from '../../models/hf/peft.ts';
import { decoderTensors, randomDecoderTensors, writeHfCheckpoint } from '../../models/hf/write-checkpoint.ts';
import { parseHfConfig } from '../../models/hf/config.ts';
import { LLAMA_LAYOUT, llamaConfigJson } from '../../models/llama/language-model.ts';
import { decodeSafetensors } from '../../models/safetensors.ts';
import { Rng } from '../../core/rng.ts';
import { FIXTURES, logitsOf } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

let tmp: string;
beforeAll(async () => {
  await initBackend('wasm', null);
  tmp = mkdtempSync(join(tmpdir(), 'metrl-hfwrite-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('decoderTensors', () => {
  for (const folder of ['llama', 'qwen2', 'gemma3']) {
    it(`gives back ${folder}'s language-model tensors bit for bit`, () => {
      const m = readHfLanguageModel(join(FIXTURES, folder), HF_ARCHITECTURES);
      const mine = decoderTensors(m.decoder);
      m.decoder.dispose();
      const { tensors } = decodeSafetensors(readFileSync(join(FIXTURES, folder, 'model.safetensors')));
      const theirs = [...tensors.keys()].filter(
        (k) => !k.startsWith('vision_tower.') && !k.startsWith('multi_modal_projector.'),
      );
      expect([...mine.keys()].sort()).toEqual(theirs.sort());
      for (const name of theirs) {
        expect(mine.get(name)!.shape, name).toEqual(tensors.get(name)!.shape);
        expect(Buffer.from(mine.get(name)!.data.buffer).equals(Buffer.from(tensors.get(name)!.data.buffer)), name).toBe(
          true,
        );
      }
    });
  }
});

describe('a random-weight Llama written by metrl', () => {
  it('loads, decodes with the cache as by recomputation, and round-trips a LoRA adapter', () => {
    const json = llamaConfigJson({
      vocabSize: 64,
      hiddenSize: 32,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      intermediateSize: 48,
    });
    const dir = join(tmp, 'tiny-llama');
    const config = parseHfConfig(json, HF_ARCHITECTURES);
    writeHfCheckpoint(dir, json, randomDecoderTensors(config.text, LLAMA_LAYOUT, new Rng(1, 'init'), 0.3));
    const m = readHfLanguageModel(dir, HF_ARCHITECTURES);
    createLora(m.decoder, { r: 4, alpha: 8 }, new Rng(2));
    for (const v of m.decoder.loraVariables())
      if (v.shape[0] === 4) v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 5));
    const prompt = [1, 7, 9, 30, 2];
    const g = generate(m.decoder, { ids: [prompt] }, { maxNewTokens: 6, keepLogits: true });
    // Without a cache: the full sequence each step; the last row must match the cached step's logits.
    let seq = [...prompt];
    let worst = 0;
    for (let t = 0; t < 6; t++) {
      const all = logitsOf(m.decoder, { ids: [seq] });
      const last = all.subarray((seq.length - 1) * 64, seq.length * 64);
      for (let i = 0; i < 64; i++) worst = Math.max(worst, Math.abs(last[i] - g.logits![0][t][i]));
      seq = [...seq, g.tokens[0][t]];
    }
    expect(worst).toBeLessThan(1e-5);
    const adapter = join(tmp, 'tiny-adapter');
    savePeftAdapter(m.decoder, adapter, { baseModelNameOrPath: dir, r: 4, alpha: 8 });
    const before = logitsOf(m.decoder, { ids: [prompt] });
    const again = readHfLanguageModel(dir, HF_ARCHITECTURES);
    loadPeftAdapter(again.decoder, adapter);
    const after = logitsOf(again.decoder, { ids: [prompt] });
    expect(Buffer.from(after.buffer).equals(Buffer.from(before.buffer))).toBe(true);
    m.decoder.dispose();
    again.decoder.dispose();
  });
});

describe('training every base weight (supervised warm start)', () => {
  for (const tied of [false, true]) {
    it(`takes gradients through the embeddings on WASM and lowers the loss (${tied ? 'tied' : 'untied'} head)`, () => {
      const json = llamaConfigJson({
        vocabSize: 32,
        hiddenSize: 16,
        numLayers: 1,
        numHeads: 2,
        numKvHeads: 1,
        intermediateSize: 24,
        tieWordEmbeddings: tied,
      });
      const dir = join(tmp, `train-${tied}`);
      writeHfCheckpoint(
        dir,
        json,
        randomDecoderTensors(parseHfConfig(json, HF_ARCHITECTURES).text, LLAMA_LAYOUT, new Rng(4), 0.2),
      );
      const m = readHfLanguageModel(dir, HF_ARCHITECTURES);
      const vars = m.decoder.baseVariables();
      vars.forEach((v) => (v.trainable = true));
      const ids = [[1, 5, 9, 12, 3, 7]];
      const targets = tf.oneHot(tf.tensor1d([5, 9, 12, 3, 7, 2], 'int32'), 32);
      const loss = () =>
        tf.tidy(() => {
          const logits = tf.reshape(m.decoder.forward({ ids }).logits!, [6, 32]);
          return tf.neg(tf.mean(tf.sum(tf.mul(targets, tf.logSoftmax(logits)), 1))) as tf.Scalar;
        });
      const before = loss().dataSync()[0];
      const { grads } = tf.variableGrads(loss, vars);
      const embedGrad = tf.tidy(() => tf.norm(grads[m.decoder.weights.embed.table.name]).dataSync()[0]);
      for (const v of vars) v.assign(tf.tidy(() => tf.sub(v, tf.mul(grads[v.name], 0.05))));
      Object.values(grads).forEach((g) => g.dispose());
      const after = loss().dataSync()[0];
      targets.dispose();
      m.decoder.dispose();
      expect(embedGrad).toBeGreaterThan(0);
      expect(after).toBeLessThan(before);
    });
  }
});
