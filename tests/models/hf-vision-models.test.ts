// The whole vision-language forward of Idefics3 (SmolVLM) and Gemma 3 loaded from ../shared/fixtures/hf through the
// shared HF loader, against the fixtures' PyTorch references: logits within 1e-4, greedy ids exact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { Idefics3Model } from '../../models/idefics3/model.ts';
import { Gemma3Model } from '../../models/gemma3/model.ts';
import type { PixelValues } from '../../models/hf/pixel-values.ts';
import { Idefics3ImageProcessor } from '../../models/idefics3/processor.ts';
import { decodePng } from '../../core/image.ts';
import { maxAbsDiff, readFixtureTensors } from './hf-vision-fixtures.ts';
import { FIXTURES, TOL, concat, maxDiff, readReference } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

let idefics3: Idefics3Model;
let gemma3: Gemma3Model;

beforeAll(async () => {
  await initBackend('wasm', null);
  idefics3 = Idefics3Model.load(join(FIXTURES, 'idefics3'), HF_ARCHITECTURES);
  gemma3 = Gemma3Model.load(join(FIXTURES, 'gemma3'), HF_ARCHITECTURES);
});
afterAll(() => {
  idefics3?.dispose();
  gemma3?.dispose();
});

/** Reference pixel values [.., 3, 32, 32] as n images. */
function pixels(data: Float32Array): PixelValues {
  return { data, shape: [data.length / (3 * 32 * 32), 3, 32, 32] };
}

function logits(model: Idefics3Model | Gemma3Model, input: Parameters<Idefics3Model['forward']>[0]): Float32Array {
  const out = model.forward(input);
  const values = out.logits!.dataSync().slice() as Float32Array;
  tf.dispose([out.logits!, out.hidden]);
  return values;
}

describe('Idefics3ForConditionalGeneration (fixtures/hf/idefics3)', () => {
  const ref = () => readReference('idefics3');

  it('one_image: logits [14, 256] within 1e-4 and the 8 greedy ids exact (image in the prefill, then the KV cache)', () => {
    const r = ref();
    const j = r.json.one_image;
    const pv = pixels(r.get('one_image.pixel_values').data);
    const diff = maxDiff(
      logits(idefics3, { ids: j.input_ids, images: { pixelValues: pv } }),
      r.get('one_image.logits').data,
      256,
    );
    expect(diff).toBeLessThan(TOL);
    const g = idefics3.generate(
      { ids: j.input_ids, images: { pixelValues: pv } },
      { maxNewTokens: j.greedy.max_new_tokens, keepLogits: true },
    );
    expect(g.tokens[0]).toEqual(j.greedy.new_ids);
    expect(maxDiff(concat(g.logits![0]), r.get('one_image.greedy.step_logits').data, 256)).toBeLessThan(TOL);
  });

  it('two_images: image k fills the k-th run of image tokens, logits [19, 256] within 1e-4', () => {
    const r = ref();
    const j = r.json.two_images;
    const diff = maxDiff(
      logits(idefics3, { ids: j.input_ids, images: { pixelValues: pixels(r.get('two_images.pixel_values').data) } }),
      r.get('two_images.logits').data,
      256,
    );
    expect(diff).toBeLessThan(TOL);
  });

  it('its processor (no preprocessor_config.json: sized to the tower, 4 x 32 then 32) turns the preprocess PNG into the reference pixel values', async () => {
    const png = await decodePng(readFileSync(join(FIXTURES, 'idefics3', 'preprocess', 'image.png')));
    expect([idefics3.processor.config.size.longest_edge, idefics3.processor.imageSize]).toEqual([128, 32]);
    const pv = idefics3.processor.preprocess([png]);
    expect(
      maxAbsDiff(
        pv.data,
        readFixtureTensors(join(FIXTURES, 'idefics3', 'preprocess', 'reference.safetensors')).get('pixel_values')!.data,
      ),
    ).toBeLessThan(TOL);
    expect(
      () => new Idefics3ImageProcessor({ max_image_size: { longest_edge: 64 } }, 'x/preprocessor_config.json', 32),
    ).toThrow(/max_image_size.longest_edge 64 differs/);
  });

  it('takes image features encoded once instead of pixels, and is differentiable through the whole image path', () => {
    const r = ref();
    const j = r.json.one_image;
    const features = idefics3.images.encode(pixels(r.get('one_image.pixel_values').data));
    expect(
      maxDiff(
        logits(idefics3, { ids: j.input_ids, images: { imageFeatures: features } }),
        r.get('one_image.logits').data,
        256,
      ),
    ).toBeLessThan(TOL);
    const px = tf.tensor4d(r.get('one_image.pixel_values').data, [1, 3, 32, 32]);
    const grad = tf.grad((p: tf.Tensor) => {
      const out = idefics3.forward({ ids: j.input_ids, images: { pixelValues: p as tf.Tensor4D }, logits: 'last' });
      out.hidden.dispose();
      return tf.sum(out.logits!);
    })(px);
    const g = grad.dataSync();
    expect(g.every(Number.isFinite) && g.some((v) => v !== 0)).toBe(true);
    tf.dispose([features, px, grad]);
  });

  it('refuses a prompt whose image tokens do not match the images, in one line', () => {
    const r = ref();
    const ids = [[1, 250, 250, 250, 2]]; // 3 image tokens for one image of 4
    expect(() =>
      idefics3.forward({ ids, images: { pixelValues: pixels(r.get('one_image.pixel_values').data) } }),
    ).toThrow(/3 image tokens \(id 250\) but its images give 4 feature rows/);
  });
});

describe('Gemma3ForConditionalGeneration (fixtures/hf/gemma3)', () => {
  const ref = () => readReference('gemma3');

  it('image: logits with token_type_ids (bidirectional image block) and without (causal + sliding) within 1e-4', () => {
    const r = ref();
    const j = r.json.image;
    const pv = pixels(r.get('image.pixel_values').data);
    const withTypes = maxDiff(
      logits(gemma3, { ids: j.input_ids, images: { pixelValues: pv } }),
      r.get('image.logits_with_token_type_ids').data,
      256,
    );
    gemma3.bidirectionalImages = false;
    let without: number;
    try {
      without = maxDiff(
        logits(gemma3, { ids: j.input_ids, images: { pixelValues: pv } }),
        r.get('image.logits_without_token_type_ids').data,
        256,
      );
    } finally {
      gemma3.bidirectionalImages = true;
    }
    expect(withTypes).toBeLessThan(TOL);
    expect(without).toBeLessThan(TOL);
  });

  it('its processor defaults to the tower size (32 here, 896 for real Gemma 3) with BILINEAR', () => {
    expect([gemma3.processor.height, gemma3.processor.width, gemma3.processor.filter]).toEqual([32, 32, 'bilinear']);
  });

  it('image: 8 greedy ids exact (bidirectional prefill, then causal cached steps)', () => {
    const r = ref();
    const j = r.json.image;
    const g = gemma3.generate(
      { ids: j.input_ids, images: { pixelValues: pixels(r.get('image.pixel_values').data) } },
      { maxNewTokens: j.greedy.max_new_tokens, keepLogits: true },
    );
    expect(g.tokens[0]).toEqual(j.greedy.new_ids);
    expect(maxDiff(concat(g.logits![0]), r.get('image.greedy.step_logits').data, 256)).toBeLessThan(TOL);
  });
});
