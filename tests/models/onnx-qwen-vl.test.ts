// The Qwen2.5-VL and Qwen3-VL vision towers on ONNX Runtime (models/onnx/hf/qwen-vl-vision-graph.ts, generated from the
// definitions tfjs runs; models/onnx/hf/qwen-vl-vision-session.ts) against the fixtures' PyTorch references (image and
// DeepStack features within 1e-4, one image and two images in one call) and against tfjs on three random images of
// different sizes in one call; and which operators the graphs use (no com.microsoft, nothing WebGPU lacks).
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import onnxProto from 'onnx-proto';
import { initBackend } from '../../models/backend.ts';
import type { GridThw } from '../../models/qwen-vl/grid.ts';
import { disposeWeights } from '../../models/qwen-vl/vision-weights.ts';
import { parseQwen25VlSetup } from '../../models/qwen2_5_vl/config.ts';
import { qwen25VisionForward } from '../../models/qwen2_5_vl/vision-tower.ts';
import { loadQwen25VisionWeights } from '../../models/qwen2_5_vl/vision-weights.ts';
import { parseQwen3VlSetup } from '../../models/qwen3_vl/config.ts';
import { qwen3VisionForward } from '../../models/qwen3_vl/vision-tower.ts';
import { loadQwen3VisionWeights } from '../../models/qwen3_vl/vision-weights.ts';
import { buildQwen25VisionGraph, buildQwen3VisionGraph } from '../../models/onnx/hf/qwen-vl-vision-graph.ts';
import { QwenVisionOrtTower } from '../../models/onnx/hf/qwen-vl-vision-session.ts';
import { HF_FIXTURES, maxAbsDiff, modelWeights, readFixtureTensors, readJson, values } from './hf-vision-fixtures.ts';

const TOL = 1e-4;
const GRID_A: GridThw = [1, 8, 12];
const GRID_B: GridThw = [1, 10, 6];

beforeAll(async () => {
  await initBackend('wasm', null);
});

function fixturePixels(folder: string) {
  const ref = readFixtureTensors(join(HF_FIXTURES, folder, 'reference.safetensors'));
  const a = ref.get('pixel_values.image_a')!.data as Float32Array;
  const b = ref.get('pixel_values.image_b')!.data as Float32Array;
  const both = new Float32Array(a.length + b.length);
  both.set(a);
  both.set(b, a.length);
  return { ref, a, both };
}

/** Random pixel rows for three images of different sizes (one larger than a window in both directions). */
function randomRows(width: number): { pixels: Float32Array; grids: GridThw[] } {
  const grids: GridThw[] = [
    [1, 12, 16],
    [1, 4, 4],
    [1, 6, 10],
  ];
  const rows = grids.reduce((n, g) => n + g[1] * g[2], 0);
  const t = tf.randomUniform([rows * width], -1, 1, 'float32', 11);
  const pixels = t.dataSync() as Float32Array;
  t.dispose();
  return { pixels, grids };
}

/** The operators of a serialised graph. */
function operators(model: Uint8Array): { ops: Set<string>; domains: Set<string> } {
  const m = onnxProto.onnx.ModelProto.decode(model);
  const nodes = m.graph!.node!;
  return { ops: new Set(nodes.map((n) => n.opType!)), domains: new Set(nodes.map((n) => n.domain ?? '')) };
}

describe('Qwen2.5-VL vision tower on ONNX Runtime', () => {
  const setup = parseQwen25VlSetup(readJson('qwen2_5_vl', 'config.json'));

  it('one image and two images in one call: features within 1e-4 of the PyTorch reference', () => {
    const weights = loadQwen25VisionWeights(modelWeights('qwen2_5_vl'), setup.vision);
    const tower = QwenVisionOrtTower.qwen25(weights, setup.vision, { threads: 1 });
    const { ref, a, both } = fixturePixels('qwen2_5_vl');
    const one = tower.forward(a, [GRID_A]);
    expect(one.features.shape).toEqual([24, 64]);
    expect(one.deepstack).toEqual([]);
    expect(maxAbsDiff(values(one.features), ref.get('one_image.image_embeds')!.data)).toBeLessThan(TOL);
    const two = tower.forward(both, [GRID_A, GRID_B]);
    expect(two.features.shape).toEqual([39, 64]);
    expect(maxAbsDiff(values(two.features), ref.get('two_images.image_embeds')!.data)).toBeLessThan(TOL);
    tower.dispose();
    disposeWeights(weights);
  });

  it('equals tfjs on three random images of different sizes in one call (partial windows, padded segments)', () => {
    const weights = loadQwen25VisionWeights(modelWeights('qwen2_5_vl'), setup.vision);
    const tower = QwenVisionOrtTower.qwen25(weights, setup.vision, { threads: 1 });
    const { pixels, grids } = randomRows(96);
    const ort = values(tower.forward(pixels, grids).features);
    const tfjs = values(qwen25VisionForward(weights, setup.vision, pixels, grids));
    expect(ort.length).toBe(((192 + 16 + 60) / 4) * 64);
    expect(maxAbsDiff(ort, tfjs)).toBeLessThan(1e-5);
    tower.dispose();
    disposeWeights(weights);
  });
});

describe('Qwen3-VL vision tower on ONNX Runtime', () => {
  const setup = parseQwen3VlSetup(readJson('qwen3_vl', 'config.json'));

  for (const [name, grids, rows] of [
    ['one_image', [GRID_A], 24],
    ['two_images', [GRID_A, GRID_B], 39],
  ] as const) {
    it(`${name}: features and both DeepStack feature sets [${rows}, 48] within 1e-4`, () => {
      const weights = loadQwen3VisionWeights(modelWeights('qwen3_vl'), setup.vision);
      const tower = QwenVisionOrtTower.qwen3(weights, setup.vision, { threads: 1 });
      const { ref, a, both } = fixturePixels('qwen3_vl');
      const out = tower.forward(grids.length === 1 ? a : both, grids);
      expect(out.features.shape).toEqual([rows, 48]);
      expect(out.deepstack.length).toBe(2);
      expect(maxAbsDiff(values(out.features), ref.get(`${name}.image_embeds`)!.data)).toBeLessThan(TOL);
      out.deepstack.forEach((d, j) =>
        expect(maxAbsDiff(values(d), ref.get(`${name}.deepstack_embeds.${j}`)!.data)).toBeLessThan(TOL),
      );
      tower.dispose();
      disposeWeights(weights);
    });
  }

  it('equals tfjs on three random images of different sizes in one call', () => {
    const weights = loadQwen3VisionWeights(modelWeights('qwen3_vl'), setup.vision);
    const tower = QwenVisionOrtTower.qwen3(weights, setup.vision, { threads: 1 });
    const { pixels, grids } = randomRows(96);
    const ort = tower.forward(pixels, grids);
    const tfjs = qwen3VisionForward(weights, setup.vision, pixels, grids);
    expect(maxAbsDiff(values(ort.features), values(tfjs.features))).toBeLessThan(1e-5);
    ort.deepstack.forEach((d, j) => expect(maxAbsDiff(values(d), values(tfjs.deepstack[j]))).toBeLessThan(1e-5));
    tower.dispose();
    disposeWeights(weights);
  });
});

describe('the towers graphs', () => {
  it('use standard-domain operators only, none of com.microsoft (FusedMatMul) and no OneHot', () => {
    const s25 = parseQwen25VlSetup(readJson('qwen2_5_vl', 'config.json')).vision;
    const s3 = parseQwen3VlSetup(readJson('qwen3_vl', 'config.json')).vision;
    const w25 = loadQwen25VisionWeights(modelWeights('qwen2_5_vl'), s25);
    const w3 = loadQwen3VisionWeights(modelWeights('qwen3_vl'), s3);
    const allowed = new Set([
      'MatMul',
      'Add',
      'Mul',
      'Gather',
      'Reshape',
      'Transpose',
      'Softmax',
      'Slice',
      'Concat',
      'Neg',
      'Unsqueeze',
      'Squeeze',
      'SimplifiedLayerNormalization',
      'LayerNormalization',
      'Sigmoid',
      'Erf',
      'Tanh',
      'Identity',
    ]);
    for (const model of [buildQwen25VisionGraph(w25, s25).model, buildQwen3VisionGraph(w3, s3).model]) {
      const { ops, domains } = operators(model);
      expect([...domains]).toEqual(['']);
      expect([...ops].filter((op) => !allowed.has(op))).toEqual([]);
    }
    disposeWeights(w25);
    disposeWeights(w3);
  });
});
