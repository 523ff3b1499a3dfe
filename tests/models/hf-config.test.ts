// config.json → DecoderConfig: class defaults inside composite configs (real gemma-3-4b-it lists six text keys),
// older key spellings, and one-line UserErrors naming config.json and the key.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseHfConfig, readGenerationTokens, readHfConfig } from '../../models/hf/config.ts';
import { UserError } from '../../core/errors.ts';
import { FIXTURES } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

const llama = () => JSON.parse(readFileSync(join(FIXTURES, 'llama', 'config.json'), 'utf8'));

describe('parseHfConfig', () => {
  it('fills a Gemma 3 text_config that lists only what differs from Gemma3TextConfig (gemma-3-4b-it as published)', () => {
    const c = parseHfConfig(
      {
        architectures: ['Gemma3ForConditionalGeneration'],
        model_type: 'gemma3',
        eos_token_id: [1, 106],
        image_token_index: 262144,
        mm_tokens_per_image: 256,
        text_config: {
          hidden_size: 2560,
          intermediate_size: 10240,
          model_type: 'gemma3_text',
          num_hidden_layers: 34,
          rope_scaling: { factor: 8.0, rope_type: 'linear' },
          sliding_window: 1024,
        },
        torch_dtype: 'bfloat16',
        vision_config: { hidden_size: 1152, image_size: 896, model_type: 'siglip_vision_model' },
      },
      HF_ARCHITECTURES,
    );
    const t = c.text;
    expect(c.dtype).toBe('bfloat16');
    expect([
      t.vocabSize,
      t.numHeads,
      t.numKvHeads,
      t.headDim,
      t.attnScale,
      t.ropeTheta,
      t.ropeLocalTheta,
      t.ropeLinearFactor,
    ]).toEqual([262208, 8, 4, 256, 256 ** -0.5, 1e6, 1e4, 8]);
    expect([t.bosTokenId, t.eosTokenIds, t.padTokenId, t.tieWordEmbeddings, t.slidingWindow]).toEqual([
      2,
      [1],
      0,
      true,
      1024,
    ]);
    // sliding_window_pattern 6 (the default): every sixth layer is global.
    expect(t.layerTypes.filter((l) => l === 'full_attention')).toHaveLength(5);
    expect(t.layerTypes[5]).toBe('full_attention');
    expect(t.layerTypes[4]).toBe('sliding_attention');
    expect(c.imageTokenId).toBe(262144);
  });

  it('applies final_logit_softcapping for Gemma3ForCausalLM only, and reads eos lists', () => {
    const c = parseHfConfig(
      {
        architectures: ['Gemma3ForCausalLM'],
        model_type: 'gemma3_text',
        vocab_size: 256,
        hidden_size: 48,
        intermediate_size: 96,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        final_logit_softcapping: 30,
        eos_token_id: [1, 106],
      },
      HF_ARCHITECTURES,
    );
    expect(c.text.finalLogitSoftcap).toBe(30);
    expect(c.text.eosTokenIds).toEqual([1, 106]);
  });

  it('names config.json and the missing key', () => {
    const json = llama();
    delete json.vocab_size;
    expect(() => parseHfConfig(json, HF_ARCHITECTURES, '/x/config.json')).toThrow(UserError);
    expect(() => parseHfConfig(json, HF_ARCHITECTURES, '/x/config.json')).toThrow(
      "/x/config.json: missing key 'vocab_size'",
    );
    expect(() => parseHfConfig({ ...llama(), architectures: undefined }, HF_ARCHITECTURES, 'config.json')).toThrow(
      "config.json: missing key 'architectures'",
    );
    expect(() =>
      parseHfConfig({ architectures: ['Idefics3ForConditionalGeneration'] }, HF_ARCHITECTURES, 'config.json'),
    ).toThrow("config.json: missing key 'text_config'");
  });

  it('refuses unsupported architectures, listing the supported ones, and unsupported RoPE types', () => {
    expect(() =>
      parseHfConfig({ ...llama(), architectures: ['MistralForCausalLM'] }, HF_ARCHITECTURES, 'c.json'),
    ).toThrow(
      /c\.json: architecture MistralForCausalLM is not supported \(supported: LlamaForCausalLM, Qwen2ForCausalLM, /,
    );
    expect(() =>
      parseHfConfig({ ...llama(), rope_scaling: { rope_type: 'llama3', factor: 8 } }, HF_ARCHITECTURES, 'c.json'),
    ).toThrow("c.json: rope_scaling.rope_type 'llama3' is not supported (linear or none)");
    expect(() => parseHfConfig({ ...llama(), hidden_size: 'big' }, HF_ARCHITECTURES, 'c.json')).toThrow(
      /c\.json: hidden_size: /,
    );
  });

  it('takes special tokens from generation_config.json', () => {
    const dir = join(FIXTURES, 'idefics3');
    expect(readGenerationTokens(dir, readHfConfig(dir, HF_ARCHITECTURES))).toEqual({
      bosTokenId: 1,
      eosTokenIds: [2],
      padTokenId: 2,
    });
    const g = join(FIXTURES, 'gemma3');
    expect(readGenerationTokens(g, readHfConfig(g, HF_ARCHITECTURES))).toEqual({
      bosTokenId: 2,
      eosTokenIds: [1],
      padTokenId: 0,
    });
  });
});
