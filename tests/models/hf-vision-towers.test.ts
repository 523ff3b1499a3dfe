import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { UserError } from '../../core/errors.ts';
import { parseVisionConfig } from '../../models/vision/vision-config.ts';
import { idefics3ImageSeqLen, parseIdefics3VisionSetup } from '../../models/idefics3/vision-config.ts';
import { parseGemma3VisionSetup } from '../../models/gemma3/vision-config.ts';
import { idefics3PositionIds, loadSiglipWeights, SIGLIP_PREFIX, siglipForward } from '../../models/vision/siglip.ts';
import { idefics3Connect, loadIdefics3Connector, pixelShuffle } from '../../models/idefics3/connector.ts';
import { gemma3Project, loadGemma3Projector } from '../../models/gemma3/projector.ts';
import { Idefics3ImageEncoder } from '../../models/idefics3/image-encoder.ts';
import { Gemma3ImageEncoder } from '../../models/gemma3/image-encoder.ts';
import { HF_FIXTURES, maxAbsDiff, modelWeights, readJson, readFixtureTensors, values } from './hf-vision-fixtures.ts';

const TOL = 1e-4;

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe("vision config (models/vision/vision-config.ts and the architectures' readers)", () => {
  it('reads the fixtures and fills omitted fields with the sub-config class defaults', () => {
    const idefics3 = parseIdefics3VisionSetup(readJson('idefics3', 'config.json'));
    expect(idefics3).toMatchObject({ scaleFactor: 2, imageTokenId: 250 });
    expect(idefics3.vision).toMatchObject({
      modelType: 'idefics3_vision',
      hiddenSize: 32,
      patchSize: 8,
      imageSize: 32,
      numHiddenLayers: 2,
      layerNormEps: 1e-6,
      hiddenAct: 'gelu_tanh',
    });
    expect(idefics3ImageSeqLen(idefics3)).toBe(4);
    const gemma3 = parseGemma3VisionSetup(readJson('gemma3', 'config.json'));
    expect(gemma3).toMatchObject({ mmTokensPerImage: 4, imageTokenId: 255, boiTokenId: 253, eoiTokenId: 254 });
    // A config written without values equal to the class defaults: SiglipVisionConfig / Gemma3Config defaults.
    const bare = parseGemma3VisionSetup({ vision_config: { hidden_size: 1152, image_size: 896, patch_size: 14 } });
    expect(bare).toMatchObject({ mmTokensPerImage: 256, imageTokenId: 262144, boiTokenId: 255999, eoiTokenId: 256000 });
    expect(bare.vision).toMatchObject({
      numAttentionHeads: 12,
      intermediateSize: 3072,
      numHiddenLayers: 12,
      layerNormEps: 1e-6,
    });
    expect(parseVisionConfig({}, 'idefics3_vision')).toMatchObject({
      hiddenSize: 1152,
      patchSize: 32,
      numAttentionHeads: 16,
    });
    expect(parseIdefics3VisionSetup({ vision_config: { image_size: 512, patch_size: 16 } })).toMatchObject({
      scaleFactor: 2,
      imageTokenId: 128257,
    });
  });

  it('refuses inconsistent or unsupported values with one line naming the key', () => {
    expect(() =>
      parseVisionConfig({ hidden_size: 30, num_attention_heads: 4 }, 'siglip_vision_model', 'm/config.json'),
    ).toThrow(/m\/config.json: vision_config.hidden_size 30/);
    expect(() => parseVisionConfig({ hidden_act: 'relu' }, 'siglip_vision_model')).toThrow(UserError);
    expect(() => parseVisionConfig({ model_type: 'siglip_vision_model' }, 'idefics3_vision')).toThrow(
      /expected idefics3_vision/,
    );
    expect(() => parseVisionConfig({ patch_size: 'eight' }, 'idefics3_vision')).toThrow(/vision_config.patch_size/);
    expect(() =>
      parseGemma3VisionSetup({ mm_tokens_per_image: 5, vision_config: { image_size: 32, patch_size: 8 } }),
    ).toThrow(/mm_tokens_per_image 5/);
  });
});

describe('Idefics3 vision tower and connector against fixtures/hf/idefics3', () => {
  it('position ids bucketize to 0..n²-1 on a full image, and coarser grids reuse the table', () => {
    expect(Array.from(idefics3PositionIds(4, 4, 4))).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(Array.from(idefics3PositionIds(32, 32, 32)).every((v, i) => v === i)).toBe(true);
    expect(Array.from(idefics3PositionIds(2, 2, 4))).toEqual([0, 2, 8, 10]); // fractional coords 0, 0.5 -> buckets 0, 2
  });

  it('one_image: vision last hidden state [16, 32] and image hidden states [4, 64] within 1e-4', () => {
    const setup = parseIdefics3VisionSetup(readJson('idefics3', 'config.json'));
    const get = modelWeights('idefics3');
    const ref = readFixtureTensors(join(HF_FIXTURES, 'idefics3', 'reference.safetensors'));
    const tower = loadSiglipWeights(get, SIGLIP_PREFIX.idefics3, setup.vision);
    const connector = loadIdefics3Connector(get, setup.vision.hiddenSize, setup.scaleFactor, 64);
    const pv = ref.get('one_image.pixel_values')!;
    const pixels = tf.tensor4d(pv.data as Float32Array, [1, 3, 32, 32]); // [1, 1, 3, 32, 32] -> one image
    const vision = siglipForward(tower, setup.vision, pixels);
    expect(vision.shape).toEqual([1, 16, 32]);
    const visionDiff = maxAbsDiff(vision.dataSync(), ref.get('one_image.vision_last_hidden_state')!.data);
    const image = idefics3Connect(connector, vision, setup.scaleFactor);
    expect(image.shape).toEqual([1, 4, 64]);
    const imageDiff = maxAbsDiff(values(image), ref.get('one_image.image_hidden_states')!.data);
    expect(visionDiff).toBeLessThan(TOL);
    expect(imageDiff).toBeLessThan(TOL);
    tf.dispose([pixels, vision]);
  });

  it('is differentiable end to end on the WASM backend (gradient reaches the pixels and the position table)', () => {
    const setup = parseIdefics3VisionSetup(readJson('idefics3', 'config.json'));
    const tower = loadSiglipWeights(modelWeights('idefics3'), SIGLIP_PREFIX.idefics3, setup.vision);
    const connector = loadIdefics3Connector(modelWeights('idefics3'), setup.vision.hiddenSize, setup.scaleFactor, 64);
    const pixels = tf.randomNormal([1, 3, 32, 32], 0, 1, 'float32', 3) as tf.Tensor4D;
    const [gPixels, gPosition] = tf.grads((p: tf.Tensor, pos: tf.Tensor) =>
      tf.sum(
        tf.square(
          idefics3Connect(
            connector,
            siglipForward({ ...tower, position: pos as tf.Tensor2D }, setup.vision, p as tf.Tensor4D),
            2,
          ),
        ),
      ),
    )([pixels, tower.position]);
    expect(gPixels.shape).toEqual([1, 3, 32, 32]);
    const g = gPixels.dataSync();
    expect(g.every(Number.isFinite) && g.some((v) => v !== 0)).toBe(true);
    expect(gPosition.dataSync().some((v) => v !== 0)).toBe(true);
    tf.dispose([pixels, gPixels, gPosition]);
  });

  it('Idefics3ImageEncoder (tower + connector) gives the one_image image hidden states as [4, 64] rows', () => {
    const setup = parseIdefics3VisionSetup(readJson('idefics3', 'config.json'));
    const ref = readFixtureTensors(join(HF_FIXTURES, 'idefics3', 'reference.safetensors'));
    const encoder = Idefics3ImageEncoder.load(modelWeights('idefics3'), setup, 64);
    expect(encoder.tokensPerImage).toBe(4);
    const rows = encoder.encode({
      data: ref.get('one_image.pixel_values')!.data as Float32Array,
      shape: [1, 3, 32, 32],
    });
    expect(rows.shape).toEqual([4, 64]);
    expect(maxAbsDiff(values(rows), ref.get('one_image.image_hidden_states')!.data)).toBeLessThan(TOL);
    encoder.dispose();
  });

  it('pixel shuffle: token (R, C) is the 2x2 block (2R+i, 2C+j), i-major, j-minor', () => {
    // 4x4 grid, D = 1, patch value = its row-major index
    const x = tf.tensor3d(
      Float32Array.from({ length: 16 }, (_, i) => i),
      [1, 16, 1],
    );
    expect(Array.from(values(pixelShuffle(x, 2)))).toEqual([0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]);
    x.dispose();
  });
});

describe('Gemma 3 SigLIP tower and projector against fixtures/hf/gemma3', () => {
  it('image: SigLIP last hidden state [16, 32] and projected features [4, 48] within 1e-4', () => {
    const setup = parseGemma3VisionSetup(readJson('gemma3', 'config.json'));
    const get = modelWeights('gemma3');
    const ref = readFixtureTensors(join(HF_FIXTURES, 'gemma3', 'reference.safetensors'));
    const tower = loadSiglipWeights(get, SIGLIP_PREFIX.gemma3, setup.vision);
    const projector = loadGemma3Projector(get, setup.vision.hiddenSize, 48);
    const pixels = tf.tensor4d(ref.get('image.pixel_values')!.data as Float32Array, [1, 3, 32, 32]);
    const vision = siglipForward(tower, setup.vision, pixels);
    const visionDiff = maxAbsDiff(vision.dataSync(), ref.get('image.vision_last_hidden_state')!.data);
    const features = gemma3Project(projector, vision, setup.mmTokensPerImage, setup.vision.layerNormEps);
    expect(features.shape).toEqual([1, 4, 48]);
    const featureDiff = maxAbsDiff(values(features), ref.get('image.image_features')!.data);
    expect(visionDiff).toBeLessThan(TOL);
    expect(featureDiff).toBeLessThan(TOL);
    tf.dispose([pixels, vision]);
  });

  it('Gemma3ImageEncoder (tower + projector) gives the image features as [4, 48] rows', () => {
    const setup = parseGemma3VisionSetup(readJson('gemma3', 'config.json'));
    const ref = readFixtureTensors(join(HF_FIXTURES, 'gemma3', 'reference.safetensors'));
    const encoder = Gemma3ImageEncoder.load(modelWeights('gemma3'), setup, 48);
    const rows = encoder.encode({ data: ref.get('image.pixel_values')!.data as Float32Array, shape: [1, 3, 32, 32] });
    expect(rows.shape).toEqual([4, 48]);
    expect(maxAbsDiff(values(rows), ref.get('image.image_features')!.data)).toBeLessThan(TOL);
    encoder.dispose();
  });

  it('also reads the in-memory names (model.vision_tower.*, model.multi_modal_projector.*) that transformers v5 writes', () => {
    const setup = parseGemma3VisionSetup(readJson('gemma3', 'config.json'));
    const ref = readFixtureTensors(join(HF_FIXTURES, 'gemma3', 'reference.safetensors'));
    const legacy = modelWeights('gemma3');
    const renamed = (name: string) => (name.startsWith('model.') ? legacy(name.slice('model.'.length)) : undefined);
    const encoder = Gemma3ImageEncoder.load(
      renamed,
      setup,
      48,
      'v5/model.safetensors',
      (n) => renamed(n) !== undefined,
    );
    const rows = encoder.encode({ data: ref.get('image.pixel_values')!.data as Float32Array, shape: [1, 3, 32, 32] });
    expect(maxAbsDiff(values(rows), ref.get('image.image_features')!.data)).toBeLessThan(TOL);
    encoder.dispose();
  });

  it('refuses a checkpoint whose tensor shape disagrees with config.json, naming the tensor', () => {
    const setup = parseGemma3VisionSetup(readJson('gemma3', 'config.json'));
    const get = modelWeights('gemma3');
    const wrong = { ...setup.vision, intermediateSize: 65 };
    expect(() => loadSiglipWeights(get, SIGLIP_PREFIX.gemma3, wrong, 'gemma3/model.safetensors')).toThrow(
      /gemma3\/model.safetensors: tensor vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight has shape \[64,32\], config.json implies \[65,32\]/,
    );
    expect(() => loadSiglipWeights(get, SIGLIP_PREFIX.idefics3, setup.vision)).toThrow(
      /model.vision_model.embeddings.patch_embedding.weight is missing/,
    );
  });
});
