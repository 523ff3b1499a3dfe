// The Qwen2.5-VL / Qwen3-VL image processor (models/qwen-vl/image-processor.ts, smart-resize.ts) against the fixtures'
// preprocess/ references: the smart_resize tables of both processors (model, Hub and Hub-like configs), Pillow's
// BICUBIC output byte for byte, pixel_values within 1e-4 and image_grid_thw exactly on all four images (two of them
// land on .5 multiples of the factor), and several images per prompt.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodePng } from '../../core/image.ts';
import { UserError } from '../../core/errors.ts';
import { QwenVlImageProcessor } from '../../models/qwen-vl/image-processor.ts';
import { smartResize } from '../../models/qwen-vl/smart-resize.ts';
import { checkImageGrids, imageTokenCount, patchCount } from '../../models/qwen-vl/grid.ts';
import { HF_FIXTURES, maxAbsDiff, readFixtureTensors, readJson } from './hf-vision-fixtures.ts';

const TOL = 1e-4;

interface PreprocessCase {
  case: string;
  input: string;
  config: string;
  resized_height: number;
  resized_width: number;
  image_grid_thw: number[];
  num_image_tokens: number;
}
interface PreprocessReference {
  cases: PreprocessCase[];
  smart_resize_table: {
    config: string;
    height: number;
    width: number;
    factor: number;
    min_pixels: number;
    max_pixels: number;
    resized_height: number;
    resized_width: number;
  }[];
}

const folders = ['qwen2_5_vl', 'qwen3_vl'] as const;
const reference = (folder: string) => readJson(folder, 'preprocess', 'reference.json') as PreprocessReference;
const configFile = (config: string) =>
  config === 'model' ? 'preprocessor_config.json' : `preprocessor_config.${config}.json`;
const image = async (folder: string, name: string) =>
  decodePng(readFileSync(join(HF_FIXTURES, folder, 'preprocess', name)));

describe('smart_resize (models/qwen-vl/smart-resize.ts)', () => {
  for (const folder of folders) {
    it(`${folder}: every row of the reference table (model, Hub and Hub-like configurations)`, () => {
      const table = reference(folder).smart_resize_table;
      expect(table.length).toBeGreaterThanOrEqual(26);
      for (const r of table)
        expect([r, smartResize(r.height, r.width, r.factor, r.min_pixels, r.max_pixels)]).toEqual([
          r,
          [r.resized_height, r.resized_width],
        ]);
    });
  }

  it("rounds exact halves to even like Python's round (round-half-up would give 56 x 84 and 64 x 96)", () => {
    expect(smartResize(42, 70, 28, 3136, 12845056)).toEqual([56, 56]); // 1.5 -> 2, 2.5 -> 2
    expect(smartResize(48, 80, 32, 4096, 16777216)).toEqual([64, 64]); // 1.5 -> 2, 2.5 -> 2
    expect(smartResize(70, 42, 28, 3136, 12845056)).toEqual([56, 56]);
    expect(smartResize(98, 126, 28, 3136, 12845056)).toEqual([112, 112]); // 3.5 -> 4 (up), 4.5 -> 4 (down)
  });

  it('refuses an aspect ratio above 200 with one line', () => {
    expect(() => smartResize(10, 2010, 28, 3136, 12845056)).toThrow(UserError);
    expect(() => smartResize(10, 2010, 28, 3136, 12845056)).toThrow(/2010x10 pixels has an aspect ratio above 200/);
  });
});

describe('QwenVlImageProcessor (models/qwen-vl/image-processor.ts)', () => {
  for (const folder of folders) {
    for (const c of reference(folder).cases) {
      it(`${folder} ${c.case}: Pillow BICUBIC bytes exact, pixel_values within 1e-4, grid ${JSON.stringify(c.image_grid_thw)}`, async () => {
        const ref = readFixtureTensors(join(HF_FIXTURES, folder, 'preprocess', 'reference.safetensors'));
        const processor = new QwenVlImageProcessor(readJson(folder, 'preprocess', configFile(c.config)));
        const input = await image(folder, c.input);
        const resized = processor.resize(input);
        expect([resized.height, resized.width]).toEqual([c.resized_height, c.resized_width]);
        expect(maxAbsDiff(resized.data, ref.get(`${c.case}.resized_u8`)!.data)).toBe(0);
        const out = processor.preprocess([input]);
        const expected = ref.get(`${c.case}.pixel_values`)!;
        expect([out.rows, out.width]).toEqual(expected.shape);
        expect(out.grids).toEqual([c.image_grid_thw]);
        expect(imageTokenCount(out.grids[0], processor.mergeSize)).toBe(c.num_image_tokens);
        expect(maxAbsDiff(out.data, expected.data)).toBeLessThan(TOL);
      });
    }
  }

  it('several images per prompt: rows concatenated image by image, one grid each (= the model fixtures pixel_values)', async () => {
    for (const folder of folders) {
      const processor = new QwenVlImageProcessor(readJson(folder, 'preprocess', 'preprocessor_config.json'));
      const out = processor.preprocess([await image(folder, 'image_a.png'), await image(folder, 'image_b.png')]);
      expect(out.grids).toEqual([
        [1, 8, 12],
        [1, 10, 6],
      ]);
      expect(out.grids.map(patchCount)).toEqual([96, 60]);
      const ref = readFixtureTensors(join(HF_FIXTURES, folder, 'reference.safetensors'));
      const a = ref.get('pixel_values.image_a')!.data;
      const b = ref.get('pixel_values.image_b')!.data;
      expect(out.rows).toBe(156);
      expect(maxAbsDiff(out.data.subarray(0, a.length), a)).toBeLessThan(TOL);
      expect(maxAbsDiff(out.data.subarray(a.length), b)).toBeLessThan(TOL);
    }
  });

  it('reads the pixel budget from min_pixels / max_pixels, else from size, else the class defaults', () => {
    const defaults = new QwenVlImageProcessor({});
    expect([defaults.patchSize, defaults.temporalPatchSize, defaults.mergeSize]).toEqual([14, 2, 2]);
    expect([defaults.minPixels, defaults.maxPixels, defaults.filter, defaults.doResize]).toEqual([
      3136,
      1003520,
      'bicubic',
      true,
    ]);
    expect(defaults.scaling.imageMean).toEqual([0.48145466, 0.4578275, 0.40821073]);
    const sized = new QwenVlImageProcessor({ size: { shortest_edge: 65536, longest_edge: 16777216 } });
    expect([sized.minPixels, sized.maxPixels]).toEqual([65536, 16777216]);
    const both = new QwenVlImageProcessor({
      size: { shortest_edge: 65536, longest_edge: 16777216 },
      min_pixels: 256,
      max_pixels: 1536,
    });
    expect([both.minPixels, both.maxPixels]).toEqual([256, 1536]);
  });

  it('without do_resize keeps the size and refuses one that is not whole merge blocks', () => {
    const p = new QwenVlImageProcessor({ do_resize: false, patch_size: 4, merge_size: 2 });
    expect(p.resizedSize(16, 24)).toEqual([16, 24]);
    expect(() => p.resizedSize(16, 20)).toThrow(/20x16 pixels is not made of whole 8-pixel merge blocks/);
    const out = p.preprocess([{ width: 8, height: 8, channels: 3, data: new Uint8Array(8 * 8 * 3).fill(255) }]);
    expect(out.grids).toEqual([[1, 2, 2]]);
    expect([out.rows, out.width]).toEqual([4, 96]);
  });

  it('refuses a bad config, or one that does not fit the vision tower, with one line', () => {
    const tower = { patchSize: 4, temporalPatchSize: 2, spatialMergeSize: 2 };
    expect(() => new QwenVlImageProcessor({ patch_size: 14 }, 'm/preprocessor_config.json', tower)).toThrow(
      /m\/preprocessor_config.json: patch_size 14 differs from the vision tower's 4/,
    );
    expect(() => new QwenVlImageProcessor({ patch_size: 4, merge_size: 3 }, 'p.json', tower)).toThrow(
      /merge_size 3 differs/,
    );
    expect(() => new QwenVlImageProcessor({ resample: 0 }, 'p.json')).toThrow(/resample 0 is not supported/);
    expect(() => new QwenVlImageProcessor({ min_pixels: -4 }, 'p.json')).toThrow(UserError);
    expect(() => new QwenVlImageProcessor({ min_pixels: 4096, max_pixels: 1024 }, 'p.json')).toThrow(
      /minimum pixel count 4096 exceeds the maximum 1024/,
    );
  });
});

describe('image grids (models/qwen-vl/grid.ts)', () => {
  it('accepts image grids and refuses videos and partial merge blocks with one line', () => {
    expect(() => checkImageGrids([[1, 8, 12]], 2)).not.toThrow();
    expect(() => checkImageGrids([[2, 8, 12]], 2)).toThrow(/grid_t 2: video inputs are not supported/);
    expect(() =>
      checkImageGrids(
        [
          [1, 8, 12],
          [1, 7, 6],
        ],
        2,
      ),
    ).toThrow(/image_grid_thw\[1\] is \[1,7,6\]/);
    expect(() => checkImageGrids([[1, 0, 4]], 2)).toThrow(UserError);
  });
});
