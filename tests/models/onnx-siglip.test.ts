// The SigLIP vision tower on ONNX Runtime (models/onnx/hf/siglip-graph.ts, generated from the definition tfjs runs) against
// the fixtures' PyTorch references (Idefics3's and Gemma 3's tower output, 1e-4) and against tfjs's siglipForward on
// several images at once; and the ONNX Runtime engine running a VLM's tower there (HfOrtSampler installs it).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { parseGemma3VisionSetup } from '../../models/gemma3/vision-config.ts';
import { parseIdefics3VisionSetup } from '../../models/idefics3/vision-config.ts';
import type { Idefics3Model } from '../../models/idefics3/model.ts';
import { loadSiglipWeights, SIGLIP_PREFIX, siglipForward } from '../../models/vision/siglip.ts';
import { SiglipOrtTower } from '../../models/onnx/hf/siglip-session.ts';
import { HfOrtSampler } from '../../models/onnx/hf/hf-sampler.ts';
import { HF_FIXTURES, maxAbsDiff, modelWeights, readJson, readFixtureTensors } from './hf-vision-fixtures.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { loadHfPolicy } from '../../models/registry.ts';

const TOL = 1e-4;

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

const cases = [
  {
    name: 'idefics3',
    setup: () => parseIdefics3VisionSetup(readJson('idefics3', 'config.json')).vision,
    prefix: SIGLIP_PREFIX.idefics3,
    pixels: 'one_image.pixel_values',
    out: 'one_image.vision_last_hidden_state',
  },
  {
    name: 'gemma3',
    setup: () => parseGemma3VisionSetup(readJson('gemma3', 'config.json')).vision,
    prefix: SIGLIP_PREFIX.gemma3,
    pixels: 'image.pixel_values',
    out: 'image.vision_last_hidden_state',
  },
] as const;

describe('SigLIP on ONNX Runtime', () => {
  for (const c of cases) {
    it(`${c.name}: the tower's last hidden state [16, 32] within 1e-4 of the PyTorch reference`, () => {
      const config = c.setup();
      const weights = loadSiglipWeights(modelWeights(c.name), c.prefix, config);
      const ref = readFixtureTensors(join(HF_FIXTURES, c.name, 'reference.safetensors'));
      const pixels = tf.tensor4d(ref.get(c.pixels)!.data as Float32Array, [1, 3, 32, 32]);
      const tower = new SiglipOrtTower(weights, config, { threads: 1 });
      const out = tower.forward(pixels);
      expect(out.shape).toEqual([1, 16, 32]);
      expect(maxAbsDiff(out.dataSync(), ref.get(c.out)!.data)).toBeLessThan(TOL);
      tower.dispose();
      tf.dispose([pixels, out]);
    });
  }

  it('three images in one run: each image its own attention, equal to tfjs image by image within 1e-5', () => {
    const config = cases[0].setup();
    const weights = loadSiglipWeights(modelWeights('idefics3'), SIGLIP_PREFIX.idefics3, config);
    const pixels = tf.randomUniform([3, 3, 32, 32], -1, 1, 'float32', 5) as tf.Tensor4D;
    const tower = new SiglipOrtTower(weights, config, { threads: 1 });
    const ort = tower.forward(pixels);
    const tfjs = siglipForward(weights, config, pixels);
    expect(ort.shape).toEqual([3, 16, 32]);
    expect(maxAbsDiff(ort.dataSync(), tfjs.dataSync())).toBeLessThan(1e-5);
    // Images do not see each other: the second image alone gives the second image's rows.
    const second = tower.forward(tf.slice(pixels, [1, 0, 0, 0], [1, 3, 32, 32]));
    expect(maxAbsDiff(second.dataSync(), tf.slice(ort, [1, 0, 0], [1, 16, 32]).dataSync())).toBeLessThan(1e-6);
    expect(() => tower.forward(tf.zeros([1, 3, 16, 16]) as tf.Tensor4D)).toThrow(/not \[N, 3, 32, 32\]/);
    tower.dispose();
  });

  it("the ONNX Runtime engine runs a VLM's tower there while it lives, tfjs before and after", async () => {
    const policy = await loadHfPolicy(hfCheckpointCopy('idefics3'));
    const encoder = (policy.image as Idefics3Model).images;
    const ref = readFixtureTensors(join(HF_FIXTURES, 'idefics3', 'reference.safetensors'));
    const pixels = tf.tensor4d(ref.get('one_image.pixel_values')!.data as Float32Array, [1, 3, 32, 32]);
    let towerRuns = 0;
    const forward = SiglipOrtTower.prototype.forward;
    const spy = vi.spyOn(SiglipOrtTower.prototype, 'forward').mockImplementation(function (
      this: SiglipOrtTower,
      p: tf.Tensor4D,
    ) {
      towerRuns++;
      return forward.call(this, p);
    });
    const tfjsTower = encoder.runTower;
    const sampler = new HfOrtSampler(policy, { threads: 1 });
    expect(encoder.runTower).not.toBe(tfjsTower);
    const features = encoder.encode(pixels); // the connector after the ORT tower
    expect(towerRuns).toBe(1);
    expect(maxAbsDiff(features.dataSync(), ref.get('one_image.image_hidden_states')!.data)).toBeLessThan(TOL);
    // A second engine on the same policy takes over while it lives, and gives the tower back to the first.
    const inner = new HfOrtSampler(policy, { threads: 1 });
    expect(encoder.runTower).not.toBe(tfjsTower);
    inner.dispose();
    encoder.encode(pixels);
    expect(towerRuns).toBe(2);
    sampler.dispose();
    expect(encoder.runTower).toBe(tfjsTower);
    encoder.encode(pixels);
    expect(towerRuns).toBe(2);
    spy.mockRestore();
    policy.dispose();
  });
});
