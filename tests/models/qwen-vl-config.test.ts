// The Qwen2.5-VL and Qwen3-VL config readers (models/qwen2_5_vl/config.ts, models/qwen3_vl/config.ts,
// models/qwen-vl/config.ts) on the fixtures' config.json, Qwen2.5-VL's Hub-style flat config.hub-flat.json, class
// defaults, transformers v5's rope_parameters, and bad values.
import { describe, expect, it } from 'vitest';
import { UserError } from '../../core/errors.ts';
import { parseQwen25VlSetup } from '../../models/qwen2_5_vl/config.ts';
import { parseQwen3VlSetup } from '../../models/qwen3_vl/config.ts';
import { qwenVlArchitecture } from '../../models/qwen-vl/config.ts';
import { readJson } from './hf-vision-fixtures.ts';

describe('Qwen2.5-VL config (models/qwen2_5_vl/config.ts)', () => {
  const expected = {
    vision: {
      depth: 3,
      hiddenSize: 16,
      intermediateSize: 32,
      numHeads: 2,
      inChannels: 3,
      patchSize: 4,
      temporalPatchSize: 2,
      spatialMergeSize: 2,
      outHiddenSize: 64,
      hiddenAct: 'silu',
      windowSize: 16,
      fullattBlockIndexes: [1],
    },
    imageTokenId: 252,
    videoTokenId: 253,
    visionStartTokenId: 250,
    visionEndTokenId: 251,
    mrope: { section: [2, 3, 3], layout: 'chunked', headDim: 16, theta: 1e6 },
  };

  it('reads the nested 4.57 config.json and the flat Hub layout alike', () => {
    expect(parseQwen25VlSetup(readJson('qwen2_5_vl', 'config.json'))).toEqual(expected);
    expect(parseQwen25VlSetup(readJson('qwen2_5_vl', 'config.hub-flat.json'))).toEqual(expected);
  });

  it('finds the class name inside text_config when the top level has no architectures', () => {
    expect((readJson('qwen2_5_vl', 'config.json') as Record<string, unknown>).architectures).toBeUndefined();
    expect(qwenVlArchitecture(readJson('qwen2_5_vl', 'config.json'))).toBe('Qwen2_5_VLForConditionalGeneration');
    expect(qwenVlArchitecture(readJson('qwen2_5_vl', 'config.hub-flat.json'))).toBe(
      'Qwen2_5_VLForConditionalGeneration',
    );
    expect(qwenVlArchitecture(readJson('qwen3_vl', 'config.json'))).toBe('Qwen3VLForConditionalGeneration');
    expect(qwenVlArchitecture({ model_type: 'qwen2_5_vl' })).toBeNull();
    expect(qwenVlArchitecture('not an object')).toBeNull();
  });

  it('fills omitted keys with the class defaults (Qwen2_5_VLVisionConfig, Qwen2_5_VLConfig)', () => {
    const s = parseQwen25VlSetup({ rope_scaling: { type: 'mrope', mrope_section: [16, 24, 24] } });
    expect(s.vision).toMatchObject({
      depth: 32,
      hiddenSize: 3584,
      numHeads: 16,
      patchSize: 14,
      windowSize: 112,
      fullattBlockIndexes: [7, 15, 23, 31],
      hiddenAct: 'silu',
    });
    expect(s).toMatchObject({ imageTokenId: 151655, visionStartTokenId: 151652, visionEndTokenId: 151653 });
    expect(s.mrope).toEqual({ section: [16, 24, 24], layout: 'chunked', headDim: 128, theta: 1e6 });
  });

  it('refuses bad values with one line naming the key', () => {
    const base = readJson('qwen2_5_vl', 'config.json') as Record<string, any>;
    const withText = (text: Record<string, unknown>) => ({ ...base, text_config: { ...base.text_config, ...text } });
    const withVision = (v: Record<string, unknown>) => ({ ...base, vision_config: { ...base.vision_config, ...v } });
    expect(() => parseQwen25VlSetup(withText({ rope_scaling: null }), 'm/config.json')).toThrow(
      /m\/config.json: text_config.rope_scaling.mrope_section is missing/,
    );
    expect(() => parseQwen25VlSetup(withText({ rope_scaling: { mrope_section: [2, 3, 4] } }))).toThrow(
      /mrope_section \[2,3,4\] sums to 9, not head_dim \/ 2 = 8/,
    );
    expect(() => parseQwen25VlSetup(withText({ rope_scaling: { type: 'yarn', mrope_section: [2, 3, 3] } }))).toThrow(
      /rope_type 'yarn' is not supported/,
    );
    expect(() => parseQwen25VlSetup(withVision({ fullatt_block_indexes: [1, 3] }))).toThrow(
      /fullatt_block_indexes names block 3, the tower has 3/,
    );
    expect(() => parseQwen25VlSetup(withVision({ window_size: 4 }))).toThrow(
      /window_size 4 is not an integer of at least/,
    );
    expect(() => parseQwen25VlSetup(withVision({ hidden_act: 'relu' }))).toThrow(/hidden_act relu is not supported/);
    expect(() => parseQwen25VlSetup(withVision({ num_heads: 3 }))).toThrow(/not a head size divisible by 4/);
    expect(() => parseQwen25VlSetup(withVision({ model_type: 'qwen3_vl' }))).toThrow(/expected qwen2_5_vl/);
    expect(() => parseQwen25VlSetup(withVision({ depth: 'three' }))).toThrow(UserError);
  });
});

describe('Qwen3-VL config (models/qwen3_vl/config.ts)', () => {
  it('reads the fixture config.json', () => {
    expect(parseQwen3VlSetup(readJson('qwen3_vl', 'config.json'))).toEqual({
      vision: {
        depth: 4,
        hiddenSize: 16,
        intermediateSize: 32,
        numHeads: 2,
        inChannels: 3,
        patchSize: 4,
        temporalPatchSize: 2,
        spatialMergeSize: 2,
        outHiddenSize: 48,
        hiddenAct: 'gelu_tanh',
        numPositionEmbeddings: 16,
        deepstackVisualIndexes: [1, 2],
      },
      imageTokenId: 252,
      videoTokenId: 253,
      visionStartTokenId: 250,
      visionEndTokenId: 251,
      mrope: { section: [4, 2, 2], layout: 'interleaved', headDim: 16, theta: 5e6 },
    });
  });

  it("fills omitted keys with the class defaults and reads transformers v5's rope_parameters", () => {
    const s = parseQwen3VlSetup({});
    expect(s.vision).toMatchObject({ depth: 27, hiddenSize: 1152, patchSize: 16, numPositionEmbeddings: 2304 });
    expect(s.vision.deepstackVisualIndexes).toEqual([8, 16, 24]);
    expect(s.mrope).toEqual({ section: [24, 20, 20], layout: 'interleaved', headDim: 128, theta: 5e6 });
    const v5 = parseQwen3VlSetup({
      text_config: {
        head_dim: 64,
        rope_parameters: {
          rope_type: 'default',
          rope_theta: 1e6,
          mrope_section: [12, 10, 10],
          mrope_interleaved: true,
        },
      },
    });
    expect(v5.mrope).toEqual({ section: [12, 10, 10], layout: 'interleaved', headDim: 64, theta: 1e6 });
  });

  it('refuses bad values with one line naming the key', () => {
    const base = readJson('qwen3_vl', 'config.json') as Record<string, any>;
    const withVision = (v: Record<string, unknown>) => ({ ...base, vision_config: { ...base.vision_config, ...v } });
    expect(() => parseQwen3VlSetup(withVision({ num_position_embeddings: 15 }), 'q/config.json')).toThrow(
      /q\/config.json: vision_config.num_position_embeddings 15 is not the square of an integer/,
    );
    expect(() => parseQwen3VlSetup(withVision({ deepstack_visual_indexes: [1, 4] }))).toThrow(
      /deepstack_visual_indexes names block 4, the tower has 4/,
    );
    expect(() => parseQwen3VlSetup(withVision({ deepstack_visual_indexes: 'first' }))).toThrow(UserError);
    expect(() => parseQwen3VlSetup({ ...base, image_token_id: -1 })).toThrow(/image_token_id/);
  });
});
