// The Qwen2.5-VL and Qwen3-VL vision towers on tfjs (models/qwen2_5_vl/vision-tower.ts, models/qwen3_vl/vision-tower.ts
// over models/qwen-vl/tfjs-vision-ops.ts) against the fixtures' PyTorch references: image features (and Qwen3-VL's
// DeepStack features and interpolated position embedding) within 1e-4 for one image and for two images in one call;
// the window index, the interpolation points and the weight layouts both checkpoints carry.
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { UserError } from '../../core/errors.ts';
import type { GridThw } from '../../models/qwen-vl/grid.ts';
import { patchCoordinates, towerRows } from '../../models/qwen-vl/vision-layout.ts';
import { disposeWeights, visionPrefix } from '../../models/qwen-vl/vision-weights.ts';
import { parseQwen25VlSetup } from '../../models/qwen2_5_vl/config.ts';
import { loadQwen25VisionWeights } from '../../models/qwen2_5_vl/vision-weights.ts';
import { qwen25VisionForward, qwen25VisionLayout } from '../../models/qwen2_5_vl/vision-tower.ts';
import { windowIndex } from '../../models/qwen2_5_vl/window-index.ts';
import { parseQwen3VlSetup } from '../../models/qwen3_vl/config.ts';
import { loadQwen3VisionWeights } from '../../models/qwen3_vl/vision-weights.ts';
import { qwen3VisionForward, qwen3VisionLayout } from '../../models/qwen3_vl/vision-tower.ts';
import { linspaceFloat32, positionTaps } from '../../models/qwen3_vl/position-interpolation.ts';
import { runTfjsTower } from '../../models/qwen-vl/tfjs-vision-ops.ts';
import type { HostTensor, TensorLookup } from '../../models/vision/siglip.ts';
import { HF_FIXTURES, maxAbsDiff, modelWeights, readFixtureTensors, readJson, values } from './hf-vision-fixtures.ts';

const TOL = 1e-4;
const GRID_A: GridThw = [1, 8, 12];
const GRID_B: GridThw = [1, 10, 6];

beforeAll(async () => {
  await initBackend('wasm', null);
});

/** The fixture's pixel rows of image a, of image b, and of both in one call. */
function pixels(folder: string) {
  const ref = readFixtureTensors(join(HF_FIXTURES, folder, 'reference.safetensors'));
  const a = ref.get('pixel_values.image_a')!.data as Float32Array;
  const b = ref.get('pixel_values.image_b')!.data as Float32Array;
  const both = new Float32Array(a.length + b.length);
  both.set(a);
  both.set(b, a.length);
  return { ref, a, b, both };
}

/** A lookup that serves the file's tensors under another prefix (the other on-disk layout). */
function renamed(get: TensorLookup, from: string, to: string): TensorLookup {
  return (name: string): HostTensor | undefined =>
    name.startsWith(to) ? get(from + name.slice(to.length)) : undefined;
}

describe('Qwen2.5-VL vision tower on tfjs', () => {
  const setup = parseQwen25VlSetup(readJson('qwen2_5_vl', 'config.json'));

  it("get_window_index: the fixture's window order and window boundaries for both grids", () => {
    const example = (readJson('qwen2_5_vl', 'reference.json') as Record<string, any>).vision_window_example;
    const { units, segments } = windowIndex([GRID_A, GRID_B], 16, 2, 4);
    expect(Array.from(units)).toEqual(example.window_index);
    expect(Array.from(segments)).toEqual(example.cu_window_seqlens);
    // A divisible unit grid (4 x 6 units, windows of 2 x 2) gets transformers' empty padding windows, dropped here.
    expect(Array.from(windowIndex([GRID_A], 16, 2, 4).segments)).toEqual([0, 16, 32, 48, 64, 80, 96]);
  });

  it('one image: features [24, 64] within 1e-4 of one_image.image_embeds', () => {
    const w = loadQwen25VisionWeights(modelWeights('qwen2_5_vl'), setup.vision);
    const { ref, a } = pixels('qwen2_5_vl');
    const out = qwen25VisionForward(w, setup.vision, a, [GRID_A]);
    expect(out.shape).toEqual([24, 64]);
    expect(maxAbsDiff(values(out), ref.get('one_image.image_embeds')!.data)).toBeLessThan(TOL);
    disposeWeights(w);
  });

  it('two images in one call: features [39, 64] within 1e-4 of two_images.image_embeds, image 0 first', () => {
    const w = loadQwen25VisionWeights(modelWeights('qwen2_5_vl'), setup.vision);
    const { ref, both, b } = pixels('qwen2_5_vl');
    const out = values(qwen25VisionForward(w, setup.vision, both, [GRID_A, GRID_B]));
    expect(out.length).toBe(39 * 64);
    expect(maxAbsDiff(out, ref.get('two_images.image_embeds')!.data)).toBeLessThan(TOL);
    // Images do not see each other: image b alone gives the last 15 rows.
    const alone = values(qwen25VisionForward(w, setup.vision, b, [GRID_B]));
    expect(maxAbsDiff(alone, out.subarray(24 * 64))).toBeLessThan(1e-5);
    disposeWeights(w);
  });

  it('the window attention matters: every block full-attention moves the features far beyond the tolerance', () => {
    const w = loadQwen25VisionWeights(modelWeights('qwen2_5_vl'), setup.vision);
    const { ref, a } = pixels('qwen2_5_vl');
    const allFull = { ...setup.vision, fullattBlockIndexes: [0, 1, 2] };
    const out = values(qwen25VisionForward(w, allFull, a, [GRID_A]));
    expect(maxAbsDiff(out, ref.get('one_image.image_embeds')!.data)).toBeGreaterThan(100 * TOL);
    disposeWeights(w);
  });

  it('reads the tower under model.visual.* too (the in-memory names a v5 file may carry), and refuses bad files', () => {
    const get = modelWeights('qwen2_5_vl');
    expect(visionPrefix(get, 'f')).toBe('visual.');
    const moved = renamed(get, 'visual.', 'model.visual.');
    expect(visionPrefix(moved, 'f')).toBe('model.visual.');
    const w = loadQwen25VisionWeights(moved, setup.vision);
    const { ref, a } = pixels('qwen2_5_vl');
    expect(
      maxAbsDiff(values(qwen25VisionForward(w, setup.vision, a, [GRID_A])), ref.get('one_image.image_embeds')!.data),
    ).toBeLessThan(TOL);
    disposeWeights(w);
    expect(() => loadQwen25VisionWeights(() => undefined, setup.vision, 'x.safetensors')).toThrow(
      /x.safetensors: no vision tower \(neither model.visual.patch_embed.proj.weight nor visual.patch_embed.proj.weight\)/,
    );
    const wider = { ...setup.vision, intermediateSize: 40 };
    expect(() => loadQwen25VisionWeights(get, wider, 'x.safetensors')).toThrow(
      /tensor visual.blocks.0.mlp.gate_proj.weight has shape \[32,16\], config.json implies \[40,16\]/,
    );
    const noMerger = (name: string) => (name.startsWith('visual.merger.mlp.2') ? undefined : get(name));
    expect(() => loadQwen25VisionWeights(noMerger, setup.vision)).toThrow(UserError);
  });

  it('refuses video grids and wrong pixel rows', () => {
    const w = loadQwen25VisionWeights(modelWeights('qwen2_5_vl'), setup.vision);
    const { a } = pixels('qwen2_5_vl');
    expect(() => qwen25VisionForward(w, setup.vision, a, [[2, 8, 6]])).toThrow(/video inputs are not supported/);
    expect(() => qwen25VisionForward(w, setup.vision, a, [[1, 8, 10]])).toThrow(/9216 pixel values for 80 rows of 96/);
    disposeWeights(w);
  });
});

describe('Qwen3-VL vision tower on tfjs', () => {
  const setup = parseQwen3VlSetup(readJson('qwen3_vl', 'config.json'));
  const ref0 = readJson('qwen3_vl', 'reference.json') as Record<string, any>;

  it("interpolation points: torch.linspace's float32 values for the fixture's 8 x 12 grid", () => {
    const { h_idxs, w_idxs } = ref0.one_image.pos_interp_linspace;
    expect(Array.from(linspaceFloat32(0, 3, 8))).toEqual(h_idxs);
    expect(Array.from(linspaceFloat32(0, 3, 12))).toEqual(w_idxs);
    expect(Array.from(linspaceFloat32(0, 3, 1))).toEqual([0]);
    // The taps of a full-table grid (4 x 4 patches on a 4 x 4 table) are the table's rows with weight 1.
    const taps = positionTaps([[1, 4, 4]], 16, 2);
    const rows = Array.from(taps.index.subarray(0, 16));
    const { row, col } = patchCoordinates([[1, 4, 4]], 2);
    expect(rows).toEqual(Array.from(row, (r, i) => r * 4 + col[i]));
    expect(Array.from(taps.weight.subarray(0, 16)).every((v) => v === 1)).toBe(true);
  });

  it('interpolated position embedding [96, 16] within 1e-4 of one_image.pos_embeds', () => {
    const w = loadQwen3VisionWeights(modelWeights('qwen3_vl'), setup.vision);
    const layout = qwen3VisionLayout([GRID_A], setup.vision);
    const { ref, a } = pixels('qwen3_vl');
    const pe = runTfjsTower(a, 96, layout, (ops) => ops.positionEmbedding(w.position));
    expect(pe.shape).toEqual([96, 16]);
    expect(maxAbsDiff(values(pe), ref.get('one_image.pos_embeds')!.data)).toBeLessThan(TOL);
    disposeWeights(w);
  });

  for (const [name, grids, rows] of [
    ['one_image', [GRID_A], 24],
    ['two_images', [GRID_A, GRID_B], 39],
  ] as const) {
    it(`${name}: features and both DeepStack feature sets [${rows}, 48] within 1e-4`, () => {
      const w = loadQwen3VisionWeights(modelWeights('qwen3_vl'), setup.vision);
      const { ref, a, both } = pixels('qwen3_vl');
      const out = qwen3VisionForward(w, setup.vision, grids.length === 1 ? a : both, grids);
      expect(out.features.shape).toEqual([rows, 48]);
      expect(out.deepstack.length).toBe(2);
      expect(maxAbsDiff(values(out.features), ref.get(`${name}.image_embeds`)!.data)).toBeLessThan(TOL);
      out.deepstack.forEach((d, j) =>
        expect(maxAbsDiff(values(d), ref.get(`${name}.deepstack_embeds.${j}`)!.data)).toBeLessThan(TOL),
      );
      disposeWeights(w);
    });
  }

  it('reads the tower under visual.* too (the Hub layout of Qwen2.5-VL), and refuses a missing DeepStack merger', () => {
    const get = modelWeights('qwen3_vl');
    expect(visionPrefix(get, 'f')).toBe('model.visual.');
    const w = loadQwen3VisionWeights(renamed(get, 'model.visual.', 'visual.'), setup.vision);
    const { ref, a } = pixels('qwen3_vl');
    const out = qwen3VisionForward(w, setup.vision, a, [GRID_A]);
    expect(maxAbsDiff(values(out.features), ref.get('one_image.image_embeds')!.data)).toBeLessThan(TOL);
    tf.dispose(out.deepstack);
    disposeWeights(w);
    const three = { ...setup.vision, deepstackVisualIndexes: [1, 2, 3] };
    expect(() => loadQwen3VisionWeights(get, three, 'm.safetensors')).toThrow(
      /m.safetensors: tensor model.visual.deepstack_merger_list.2.norm.weight is missing/,
    );
  });
});

describe('per-call layouts (models/qwen-vl/vision-layout.ts)', () => {
  it('Qwen2.5-VL runs its rows window by window and restores image order; Qwen3-VL keeps pixel order', () => {
    const q25 = qwen25VisionLayout([GRID_A], parseQwen25VlSetup(readJson('qwen2_5_vl', 'config.json')).vision);
    expect(q25.rows).toBe(96);
    // Window 0 holds units 0, 1 (row 0) then 6, 7 (row 1 of the 4 x 6 unit grid): pixel rows 0-7, then 24-31.
    expect(Array.from(q25.order!.subarray(0, 12))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 24, 25, 26, 27]);
    expect(Array.from(q25.restore!.subarray(0, 8))).toEqual([0, 1, 4, 5, 8, 9, 2, 3]);
    const rows = towerRows(
      Float32Array.from({ length: 96 * 2 }, (_, i) => Math.floor(i / 2)),
      2,
      q25,
    );
    expect(Array.from(rows.subarray(16, 18))).toEqual([24, 24]); // tower row 8 is pixel row 24
    const q3 = qwen3VisionLayout([GRID_A, GRID_B], parseQwen3VlSetup(readJson('qwen3_vl', 'config.json')).vision);
    expect([q3.order, q3.restore, q3.segments.window]).toEqual([null, null, null]);
    expect(Array.from(q3.segments.image)).toEqual([0, 96, 156]);
    expect(q3.positionTaps!.index.length).toBe(4 * 156);
  });
});
