// The other Hugging Face language models of ../shared/fixtures/hf, loaded through the CLI's loader and checked against
// the fixtures' PyTorch references (logits/hidden states within 1e-4, greedy ids exact): llama-bf16 (bf16 weights
// upcast), qwen2 (q/k/v biases, tied head), qwen3 (q/k norms, head_dim apart from hidden / heads), gemma3 (text
// references `text.*`, and the image prompt with the reference image features merged after the embedding scale),
// idefics3's Llama text model with its reference image states.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { readHfLanguageModel, type LoadedHfModel } from '../../models/hf/load-decoder.ts';
import { generate } from '../../models/hf/generate.ts';
import type { HfDecoder } from '../../models/hf/decoder.ts';
import { FIXTURES, TOL, concat, logitsOf, maxDiff, readReference, textReferenceChecks } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

const open: LoadedHfModel[] = [];
function load(folder: string): LoadedHfModel {
  const m = readHfLanguageModel(join(FIXTURES, folder), HF_ARCHITECTURES);
  open.push(m);
  return m;
}

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => open.forEach((m) => m.decoder.dispose()));

/** Embeddings of `ids` [1, T] with the rows of `imageToken` replaced by `features` [M, H] (image 0 first). */
function mergedEmbeds(model: HfDecoder, ids: number[], imageToken: number, features: Float32Array): tf.Tensor3D {
  return tf.tidy(() => {
    const emb = model.embed([ids]); // [1, T, H]
    const H = model.config.hiddenSize;
    const rows = tf.unstack(tf.reshape(emb, [ids.length, H]));
    let k = 0;
    const merged = rows.map((r, t) => (ids[t] === imageToken ? tf.tensor1d(features.subarray(H * k, H * ++k)) : r));
    return tf.reshape(tf.stack(merged), [1, ids.length, H]) as tf.Tensor3D;
  });
}

function expectStandard(r: Record<string, number | boolean>): void {
  for (const [k, v] of Object.entries(r)) {
    if (typeof v === 'boolean') expect(v, k).toBe(true);
    else expect(v, k).toBeLessThan(TOL);
  }
}

describe('Hugging Face llama-bf16', () => {
  it('upcasts bf16 exactly and matches the fp32-from-bf16 references', () => {
    const m = load('llama-bf16');
    const ref = readReference('llama-bf16');
    expect(m.config.dtype).toBe('bfloat16');
    // The first values of two tensors as the fixture lists them (bits << 16, exact).
    const embed = m.tensors.read('model.embed_tokens.weight').data;
    const head = m.tensors.read('lm_head.weight').data;
    expect(Array.from(embed.subarray(0, 4))).toEqual(ref.json.sample_weight_values['model.embed_tokens.weight']);
    expect(Array.from(head.subarray(0, 4))).toEqual(ref.json.sample_weight_values['lm_head.weight']);
    const r = textReferenceChecks(m.decoder, ref);
    console.log('llama-bf16', r);
    expectStandard(r);
  });
});

describe('Hugging Face qwen2', () => {
  it('has q/k/v biases and a tied head, and matches the references', () => {
    const m = load('qwen2');
    const c = m.config.text;
    expect([c.qkvBias, c.oBias, c.tieWordEmbeddings, c.rmsNormEps, c.ropeTheta, c.slidingWindow]).toEqual([
      true,
      false,
      true,
      1e-6,
      1e6,
      null,
    ]);
    expect(m.tensors.has('lm_head.weight')).toBe(false);
    const r = textReferenceChecks(m.decoder, readReference('qwen2'));
    console.log('qwen2', r);
    expectStandard(r);
  });
});

describe('Hugging Face qwen3', () => {
  it('has q/k norms, its own head_dim, no biases and a tied head, and matches the references', () => {
    const m = load('qwen3');
    const c = m.config.text;
    expect([c.family, c.qkNorm, c.normStyle, c.headDim, c.hiddenSize, c.qkvBias, c.oBias, c.tieWordEmbeddings]).toEqual(
      ['qwen3', true, 'w', 16, 48, false, false, true],
    );
    expect(c.attnScale).toBeCloseTo(16 ** -0.5, 12);
    expect(m.tensors.has('model.layers.0.self_attn.q_norm.weight')).toBe(true);
    const r = textReferenceChecks(m.decoder, readReference('qwen3'));
    console.log('qwen3', r);
    expectStandard(r);
  });
});

describe('Hugging Face gemma3 (language model of Gemma3ForConditionalGeneration)', () => {
  let m: LoadedHfModel;
  beforeAll(() => {
    m = load('gemma3');
  });

  it('reads the Gemma 3 text settings, class defaults included', () => {
    const c = m.config.text;
    expect(m.config.imageTokenId).toBe(255);
    expect([c.hiddenSize, c.headDim, c.numHeads, c.numKvHeads, c.intermediateSize, c.act, c.normStyle]).toEqual([
      48,
      16,
      4,
      2,
      96,
      'gelu_tanh',
      'one_plus_w',
    ]);
    expect([c.attnScale, c.slidingWindow, c.ropeTheta, c.ropeLinearFactor, c.ropeLocalTheta]).toEqual([
      24 ** -0.5,
      3,
      1e6,
      8,
      1e4,
    ]);
    expect(c.layerTypes).toEqual(['sliding_attention', 'sliding_attention', 'full_attention']);
    // bos 2 / eos 1 / pad 0 / tied are omitted from text_config: Gemma3TextConfig's defaults.
    expect([c.bosTokenId, c.eosTokenIds, c.padTokenId, c.tieWordEmbeddings, c.embedScale]).toEqual([
      2,
      [1],
      0,
      true,
      Math.fround(Math.sqrt(48)),
    ]);
  });

  it('matches the text references', () => {
    const r = textReferenceChecks(m.decoder, readReference('gemma3'), 'text.');
    console.log('gemma3 text', r);
    expectStandard(r);
  });

  it('matches the image-prompt logits with and without token_type_ids, and the greedy continuation', () => {
    const ref = readReference('gemma3');
    const img = ref.json.image;
    const ids: number[] = img.input_ids[0];
    const V = m.config.text.vocabSize;
    const feats = ref.get('image.image_features').data;
    const embeds = mergedEmbeds(m.decoder, ids, 255, feats);
    const withTT = logitsOf(m.decoder, { ids: [ids], inputsEmbeds: embeds, tokenTypeIds: img.token_type_ids });
    const without = logitsOf(m.decoder, { ids: [ids], inputsEmbeds: embeds });
    const dWith = maxDiff(withTT, ref.get('image.logits_with_token_type_ids').data, V);
    const dWithout = maxDiff(without, ref.get('image.logits_without_token_type_ids').data, V);
    const g = generate(
      m.decoder,
      { ids: [ids], inputsEmbeds: embeds, tokenTypeIds: img.token_type_ids },
      { maxNewTokens: img.greedy.max_new_tokens, keepLogits: true },
    );
    embeds.dispose();
    const dGreedy = maxDiff(concat(g.logits![0]), ref.get('image.greedy.step_logits').data, V);
    console.log('gemma3 image', { dWith, dWithout, dGreedy });
    expect(dWith).toBeLessThan(TOL);
    expect(dWithout).toBeLessThan(TOL);
    expect(dGreedy).toBeLessThan(TOL);
    expect(g.tokens[0]).toEqual(img.greedy.new_ids);
  });
});

describe('Hugging Face idefics3 (its Llama language model)', () => {
  it('reads text_config with LlamaConfig defaults and matches the image-prompt logits given the image states', () => {
    const m = load('idefics3');
    const c = m.config.text;
    expect([c.ropeTheta, c.rmsNormEps, c.bosTokenId, c.eosTokenIds, c.padTokenId, c.tieWordEmbeddings]).toEqual([
      1e5,
      1e-5,
      1,
      [2],
      2,
      false,
    ]);
    const ref = readReference('idefics3');
    const V = c.vocabSize;
    // two_images needs the vision tower for its states; one_image's are stored (after the connector).
    const ids: number[] = ref.json.one_image.input_ids[0];
    const embeds = mergedEmbeds(m.decoder, ids, 250, ref.get('one_image.image_hidden_states').data);
    const d = maxDiff(logitsOf(m.decoder, { ids: [ids], inputsEmbeds: embeds }), ref.get('one_image.logits').data, V);
    const g = generate(m.decoder, { ids: [ids], inputsEmbeds: embeds }, { maxNewTokens: 8, keepLogits: true });
    embeds.dispose();
    const dGreedy = maxDiff(concat(g.logits![0]), ref.get('one_image.greedy.step_logits').data, V);
    console.log('idefics3 one_image', { d, dGreedy });
    expect(d).toBeLessThan(TOL);
    expect(dGreedy).toBeLessThan(TOL);
    expect(g.tokens[0]).toEqual(ref.json.one_image.greedy.new_ids);
  });
});
