// The Hugging Face decoders on ONNX Runtime (models/onnx/hf/hf-graph.ts, generated from the block definition in
// models/hf/decoder-ops.ts) against the tfjs forward, which the fixtures' PyTorch references pin (tests/models/hf-*):
// for every architecture (llama with the PEFT fixture adapter, qwen2, qwen3, gemma3's and idefics3's language models
// with random non-zero adapters), a left-padded batched prefill's logits within 1e-4, the base (LoRA off) too, and cached
// greedy decoding of left-padded prompts in groups with identical ids and step logits within 1e-4; a graph whose
// weights are kept in an external data file (what a model past protobuf's 2 GiB gets) gives the same logits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { readHfLanguageModel, type LoadedHfModel } from '../../models/hf/load-decoder.ts';
import { generate } from '../../models/hf/generate.ts';
import { createLora, loadPeftAdapter } from '../../models/hf/peft.ts';
import { HfOrtModel } from '../../models/onnx/hf/hf-session.ts';
import { embedIds, generateOrt } from '../../models/onnx/hf/hf-generate.ts';
import { Rng } from '../../core/rng.ts';
import { FIXTURES, TOL, concat, logitsOf, maxDiff, readReference } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

const open: { m: LoadedHfModel; ort: HfOrtModel }[] = [];

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => open.forEach(({ m, ort }) => (ort.dispose(), m.decoder.dispose())));

/** A fixture's decoder with an adapter whose A and B are both non-zero, and its ORT model. */
function setup(folder: string, adapter: 'peft' | 'random'): { m: LoadedHfModel; ort: HfOrtModel } {
  const m = readHfLanguageModel(join(FIXTURES, folder), HF_ARCHITECTURES);
  if (adapter === 'peft') loadPeftAdapter(m.decoder, join(FIXTURES, 'llama-lora'));
  else {
    createLora(m.decoder, { r: 4, alpha: 8 }, new Rng(7, 'lora'));
    let seed = 11;
    for (const l of m.decoder.linears().values())
      l.lora!.b.assign(tf.randomNormal(l.lora!.b.shape, 0, 0.05, 'float32', seed++));
  }
  const ort = new HfOrtModel(m.decoder, { threads: 1 });
  open.push({ m, ort });
  return { m, ort };
}

const CASES = [
  { name: 'llama (PEFT fixture adapter)', folder: 'llama', adapter: 'peft', prefix: '' },
  { name: 'qwen2 (q/k/v biases, tied head)', folder: 'qwen2', adapter: 'random', prefix: '' },
  { name: 'qwen3 (q/k norms, head_dim apart from hidden / heads)', folder: 'qwen3', adapter: 'random', prefix: '' },
  {
    name: 'gemma3 text (sliding layers, local RoPE, q/k and sandwich norms, embed scale)',
    folder: 'gemma3',
    adapter: 'random',
    prefix: 'text',
  },
  { name: "idefics3's Llama text model", folder: 'idefics3', adapter: 'random', prefix: null },
] as const;

describe.each(CASES)('ONNX Runtime vs tfjs: $name', ({ folder, adapter, prefix }) => {
  let m: LoadedHfModel;
  let ort: HfOrtModel;
  beforeAll(() => ({ m, ort } = setup(folder, adapter)));

  /** Left-padded prompts: the fixture's batch, or (idefics3 has no text batch) two made-up ones. */
  function batch(): { ids: number[][]; mask: number[][] } {
    if (prefix === null)
      return {
        ids: [
          [5, 9, 17, 33, 40, 41, 42, 43],
          [0, 0, 0, 7, 8, 90, 91, 92],
        ],
        mask: [
          [1, 1, 1, 1, 1, 1, 1, 1],
          [0, 0, 0, 1, 1, 1, 1, 1],
        ],
      };
    const ref = readReference(folder);
    const j = prefix ? ref.json[prefix] : ref.json;
    return { ids: j.batch.input_ids, mask: j.batch.attention_mask };
  }

  it('prefill: a left-padded batch gives the same logits, with the adapter and without', () => {
    const { ids, mask } = batch();
    const V = m.config.text.vocabSize;
    const T = ids[0].length;
    const rowMask = mask.flat();
    const diffs: Record<string, number> = {};
    for (const useLora of [true, false]) {
      const expected = logitsOf(m.decoder, { ids, attentionMask: mask, useLora });
      const got = ort.run({
        embeds: embedIds(m.decoder, ids),
        rows: ids.length,
        seq: T,
        attentionMask: mask,
        cache: null,
        useLora,
      }).logits;
      diffs[useLora ? 'lora' : 'base'] = maxDiff(got, expected, V, rowMask);
    }
    // The adapter matters (so the comparison with it on is not the base's twice).
    const withLora = logitsOf(m.decoder, { ids, attentionMask: mask });
    const base = logitsOf(m.decoder, { ids, attentionMask: mask, useLora: false });
    diffs.adapterEffect = maxDiff(withLora, base, V, rowMask);
    console.log(folder, 'prefill', diffs);
    expect(diffs.lora).toBeLessThan(TOL);
    expect(diffs.base).toBeLessThan(TOL);
    expect(diffs.adapterEffect).toBeGreaterThan(0.01);
  });

  it('cached greedy decoding of left-padded prompts in groups: identical ids, step logits within 1e-4', () => {
    const { ids, mask } = batch();
    const V = m.config.text.vocabSize;
    const options = { maxNewTokens: 6, keepLogits: true, group: 2 };
    const expected = generate(m.decoder, { ids, attentionMask: mask }, options);
    const got = generateOrt(ort, { ids, attentionMask: mask }, options);
    const d = maxDiff(concat(got.logits!.flat()), concat(expected.logits!.flat()), V);
    console.log(folder, 'greedy', { d, tokens: got.tokens });
    expect(got.tokens).toEqual(expected.tokens);
    expect(d).toBeLessThan(TOL);
  });

  if (adapter === 'peft') {
    it("with its weights in an external data file (a model past protobuf's 2 GiB), gives the same logits", () => {
      const { ids, mask } = batch();
      const external = new HfOrtModel(m.decoder, { threads: 1, maxInlineBytes: 0 });
      const request = {
        embeds: embedIds(m.decoder, ids),
        rows: ids.length,
        seq: ids[0].length,
        attentionMask: mask,
        cache: null,
        useLora: true,
      };
      expect(Array.from(external.run(request).logits)).toEqual(Array.from(ort.run(request).logits));
      external.dispose();
    });

    it("reproduces the PEFT fixture's own greedy references (batched, cached)", () => {
      const ref = readReference('llama-lora');
      const gb = ref.json.greedy_batch;
      const got = generateOrt(
        ort,
        { ids: gb.input_ids, attentionMask: gb.attention_mask },
        { maxNewTokens: gb.max_new_tokens, keepLogits: true },
      );
      expect(got.tokens).toEqual(gb.new_ids);
      expect(
        maxDiff(concat(got.logits!.flat()), ref.get('greedy_batch.step_logits').data, m.config.text.vocabSize),
      ).toBeLessThan(TOL);
    });
  }
});

describe('ONNX Runtime vs tfjs: Gemma 3 image prompt (merged image features, bidirectional image block)', () => {
  it('gives the same logits and greedy continuation as tfjs and the fixture', () => {
    const { m, ort } = setup('gemma3', 'random');
    const ref = readReference('gemma3');
    const img = ref.json.image;
    const ids: number[] = img.input_ids[0];
    const H = m.config.text.hiddenSize;
    const V = m.config.text.vocabSize;
    // The reference image features replace the image-token rows after the embedding scale.
    const embeds = embedIds(m.decoder, [ids]);
    const feats = ref.get('image.image_features').data;
    let k = 0;
    ids.forEach((id, t) => {
      if (id === 255) embeds.set(feats.subarray(H * k, H * ++k), t * H);
    });
    const tfEmbeds = tf.tensor3d(embeds, [1, ids.length, H]);
    const diffs: Record<string, number> = {};
    for (const useLora of [true, false]) {
      const expected = logitsOf(m.decoder, {
        ids: [ids],
        inputsEmbeds: tfEmbeds,
        tokenTypeIds: img.token_type_ids,
        useLora,
      });
      const got = ort.run({
        embeds,
        rows: 1,
        seq: ids.length,
        attentionMask: [ids.map(() => 1)],
        tokenTypeIds: img.token_type_ids,
        cache: null,
        useLora,
      }).logits;
      diffs[useLora ? 'lora' : 'base'] = maxDiff(got, expected, V);
      if (!useLora) diffs.baseVsFixture = maxDiff(got, ref.get('image.logits_with_token_type_ids').data, V);
    }
    const options = { maxNewTokens: img.greedy.max_new_tokens, keepLogits: true, useLora: false };
    const g = generateOrt(ort, { ids: [ids], embeds, tokenTypeIds: img.token_type_ids }, options);
    diffs.greedyBaseVsFixture = maxDiff(concat(g.logits![0]), ref.get('image.greedy.step_logits').data, V);
    const gl = generateOrt(
      ort,
      { ids: [ids], embeds, tokenTypeIds: img.token_type_ids },
      { ...options, useLora: true },
    );
    const el = generate(
      m.decoder,
      { ids: [ids], inputsEmbeds: tfEmbeds, tokenTypeIds: img.token_type_ids },
      { ...options, useLora: true },
    );
    diffs.greedyLora = maxDiff(concat(gl.logits![0]), concat(el.logits![0]), V);
    tfEmbeds.dispose();
    console.log('gemma3 image', diffs);
    for (const v of Object.values(diffs)) expect(v).toBeLessThan(TOL);
    expect(g.tokens[0]).toEqual(img.greedy.new_ids);
    expect(gl.tokens).toEqual(el.tokens);
  });
});
