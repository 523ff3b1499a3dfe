// LlamaForCausalLM loaded from ../shared/fixtures/hf/llama through the same loader the CLI uses, against the
// fixture's PyTorch references: logits and hidden states within 1e-4, greedy ids exact (KV cache, left padding).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { createLora, detachLora } from '../../models/hf/peft.ts';
import { Rng } from '../../core/rng.ts';
import { readHfLanguageModel, type LoadedHfModel } from '../../models/hf/load-decoder.ts';
import { generate } from '../../models/hf/generate.ts';
import { logitsOf, maxDiff } from './hf-fixture.ts';
import { FIXTURES, TOL, readReference, textReferenceChecks } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

let loaded: LoadedHfModel;

beforeAll(async () => {
  await initBackend('wasm', null);
  loaded = readHfLanguageModel(join(FIXTURES, 'llama'), HF_ARCHITECTURES);
});
afterAll(() => loaded?.decoder.dispose());

describe('Hugging Face Llama (fixtures/hf/llama)', () => {
  it('parses config.json into the decoder settings', () => {
    const c = loaded.config.text;
    expect(loaded.config.architecture).toBe('LlamaForCausalLM');
    expect([c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, c.intermediateSize]).toEqual([
      256, 64, 2, 4, 2, 16, 128,
    ]);
    expect([c.rmsNormEps, c.ropeTheta, c.tieWordEmbeddings, c.qkvBias, c.bosTokenId, c.eosTokenIds]).toEqual([
      1e-5,
      10000,
      false,
      false,
      1,
      [2],
    ]);
  });

  it('matches the reference logits, hidden states and greedy generations', () => {
    const r = textReferenceChecks(loaded.decoder, readReference('llama'));
    console.log('llama', r);
    for (const k of [
      'batch',
      'batchDerivedPositions',
      'single0',
      'single1',
      'hidden',
      'greedyLogits',
      'greedyBatchLogits',
    ])
      expect(r[k], k).toBeLessThan(TOL);
    expect(r.greedyIdsEqual).toBe(true);
    expect(r.greedyBatchIdsEqual).toBe(true);
  });

  it('decodes groups from one prefill per prompt (rows prompt 0 × G, then prompt 1 × G) with the reference ids', () => {
    const gb = readReference('llama').json.greedy_batch;
    const res = generate(
      loaded.decoder,
      { ids: gb.input_ids, attentionMask: gb.attention_mask },
      { maxNewTokens: gb.max_new_tokens, group: 3 },
    );
    expect(res.tokens).toEqual([
      gb.new_ids[0],
      gb.new_ids[0],
      gb.new_ids[0],
      gb.new_ids[1],
      gb.new_ids[1],
      gb.new_ids[1],
    ]);
    // Stop ids end a row early (its stop token included); the others run on.
    const stopAt = gb.new_ids[1][2];
    const stopped = generate(
      loaded.decoder,
      { ids: gb.input_ids, attentionMask: gb.attention_mask },
      { maxNewTokens: gb.max_new_tokens, stopIds: [stopAt] },
    );
    expect(stopped.tokens[1]).toEqual(gb.new_ids[1].slice(0, 3));
    expect(stopped.finished[1]).toBe(true);
  });

  it('computes only the requested logit rows (logitsFrom) with the same values', () => {
    const ref = readReference('llama');
    const b = ref.json.batch;
    const all = ref.get('batch.logits').data;
    const tail = logitsOf(loaded.decoder, { ids: b.input_ids, attentionMask: b.attention_mask, logitsFrom: 8 });
    expect(tail.length).toBe(2 * 4 * 256);
    const expected = new Float32Array(2 * 4 * 256);
    for (let r = 0; r < 2; r++) expected.set(all.subarray((r * 12 + 8) * 256, (r * 12 + 12) * 256), r * 4 * 256);
    expect(maxDiff(tail, expected, 256)).toBeLessThan(TOL);
  });

  it('leaves no tensors behind (forward, generation with groups and stops, recomputed LoRA gradients)', () => {
    const vars = createLora(loaded.decoder, { r: 2, alpha: 4 }, new Rng(1));
    const before = tf.memory().numTensors;
    tf.tidy(() => loaded.decoder.forward({ ids: [[1, 2, 3]] }).logits!.dataSync());
    generate(
      loaded.decoder,
      {
        ids: [
          [1, 2, 3],
          [0, 4, 5],
        ],
        attentionMask: [
          [1, 1, 1],
          [0, 1, 1],
        ],
      },
      { maxNewTokens: 4, group: 2, stopIds: [93] },
    );
    const { value, grads } = tf.variableGrads(
      () =>
        tf.mean(loaded.decoder.forward({ ids: [[1, 2, 3, 4]], recompute: true, logitsFrom: 2 }).logits!) as tf.Scalar,
      vars,
    );
    value.dispose();
    Object.values(grads).forEach((g) => g.dispose());
    expect(tf.memory().numTensors).toBe(before);
    detachLora(loaded.decoder);
  });
});
