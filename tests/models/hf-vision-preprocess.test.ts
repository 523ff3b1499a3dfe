import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodePng, type RawImage } from '../../core/image.ts';
import { UserError } from '../../core/errors.ts';
import { resizePil } from '../../models/hf/resample.ts';
import { Idefics3ImageProcessor, idefics3ResizeSize } from '../../models/idefics3/processor.ts';
import { Gemma3ImageProcessor } from '../../models/gemma3/processor.ts';
import { HF_FIXTURES, maxAbsDiff, readJson, readFixtureTensors } from './hf-vision-fixtures.ts';

const PRE = join(HF_FIXTURES, 'idefics3', 'preprocess');

/** A one-row image whose three channels are the given values, the same in R, G and B. */
function row(values: number[]): RawImage {
  return { width: values.length, height: 1, channels: 3, data: Uint8Array.from(values.flatMap((v) => [v, v, v])) };
}
const red = (img: RawImage) => Array.from(img.data.filter((_, i) => i % 3 === 0));

describe('Pillow resampling (models/hf/resample.ts)', () => {
  it('BILINEAR downsampling 4 -> 2 uses the stretched triangle (3/7, 3/7, 1/7): hand-computed [50, 160]', () => {
    // out 0: centre 1, taps 0..2 with weights 0.75, 0.75, 0.25 (normalised /1.75) -> (0·3 + 70·3 + 140) / 7 = 50
    // out 1: centre 3, taps 1..3 with 0.25, 0.75, 0.75 -> (70 + 140·3 + 210·3) / 7 = 160
    expect(red(resizePil(row([0, 70, 140, 210]), 2, 1, 'bilinear'))).toEqual([50, 160]);
  });

  it('BILINEAR upsampling 2 -> 4 interpolates at centres 0.25, 0.75, 1.25, 1.75: hand-computed [0, 50, 150, 200]', () => {
    expect(red(resizePil(row([0, 200]), 4, 1, 'bilinear'))).toEqual([0, 50, 150, 200]);
  });

  it('BICUBIC (a = -0.5) overshoots and rounds: 2 -> 4 on [100, 200] gives 91 first (1.0882·100 - 0.0882·200)', () => {
    // out 0: taps at distance 0.25 (w 0.8671875) and 1.25 (w -0.0703125), normalised by their sum 0.796875
    const out = red(resizePil(row([100, 200]), 4, 1, 'bicubic'));
    expect(out[0]).toBe(91);
    expect(out[3]).toBe(209); // mirror image: 200·1.0882 - 100·0.0882 = 208.8
  });

  it('LANCZOS reproduces both Pillow steps of the Idefics3 fixture byte for byte (upsampling 45x30 -> 128x86, then 32x32)', async () => {
    const ref = readFixtureTensors(join(PRE, 'reference.safetensors'));
    const image = await decodePng(readFileSync(join(PRE, 'image.png')));
    expect([image.width, image.height]).toEqual([45, 30]);
    const step1 = resizePil(image, 128, 86, 'lanczos');
    expect(ref.get('step1_resized_u8')!.shape).toEqual([86, 128, 3]);
    expect(maxAbsDiff(step1.data, ref.get('step1_resized_u8')!.data)).toBe(0);
    const step2 = resizePil(step1, 32, 32, 'lanczos');
    expect(maxAbsDiff(step2.data, ref.get('step2_resized_u8')!.data)).toBe(0);
  });
});

describe('Idefics3ImageProcessor (models/idefics3/processor.ts)', () => {
  it('sizes the first resize like transformers: longest edge fixed, short edge truncated then bumped to even', () => {
    expect(idefics3ResizeSize(30, 45, 128)).toEqual([86, 128]); // int(128 / 1.5) = 85 -> 86
    expect(idefics3ResizeSize(45, 30, 128)).toEqual([128, 86]);
    expect(idefics3ResizeSize(100, 100, 364)).toEqual([364, 364]);
    expect(idefics3ResizeSize(10, 8000, 5000)).toEqual([4, 4096]); // 5000 x 6, capped: 4096 x int(4096 / (5000 / 6)) = 4
  });

  it('turns the fixture PNG into the reference pixel values [1, 3, 32, 32] within 1e-4', async () => {
    const ref = readFixtureTensors(join(PRE, 'reference.safetensors')).get('pixel_values')!;
    const processor = new Idefics3ImageProcessor(readJson('idefics3', 'preprocess', 'preprocessor_config.json'));
    expect(processor.splitting).toBe(false);
    const image = await decodePng(readFileSync(join(PRE, 'image.png')));
    const out = processor.preprocess([image]);
    expect(out.shape).toEqual([1, 3, 32, 32]);
    expect(ref.shape).toEqual([1, 1, 3, 32, 32]);
    const diff = maxAbsDiff(out.data, ref.data);
    expect(diff).toBeLessThan(1e-4);
  });

  it('uses the class defaults for missing fields and refuses a bad config with one line', () => {
    const p = new Idefics3ImageProcessor({});
    expect([p.imageSize, p.config.size.longest_edge, p.filter, p.splitting]).toEqual([364, 1456, 'lanczos', true]);
    expect(() => new Idefics3ImageProcessor({ size: { longest_edge: -1 } }, 'x/preprocessor_config.json')).toThrow(
      UserError,
    );
    expect(() => new Idefics3ImageProcessor({ resample: 0 }, 'x/preprocessor_config.json')).toThrow(
      /resample 0 is not supported/,
    );
  });
});

describe('Gemma3ImageProcessor (models/gemma3/processor.ts; no fixture: hand-computed cases)', () => {
  it('resizes to the config size with BILINEAR and maps u8 to [-1, 1] channel-first: (u/255 - 0.5) / 0.5', () => {
    const p = new Gemma3ImageProcessor({ size: { height: 1, width: 2 } });
    expect(p.filter).toBe('bilinear');
    const img: RawImage = {
      width: 4,
      height: 1,
      channels: 3,
      data: Uint8Array.from([0, 255, 0, 70, 255, 0, 140, 255, 0, 210, 255, 0]),
    };
    const out = p.preprocess([img]);
    expect(out.shape).toEqual([1, 3, 1, 2]);
    // red resized to [50, 160] (hand-computed above); green stays 255 -> 1, blue 0 -> -1; planes R, G, B
    const expected = [50 / 255 / 0.5 - 1, 160 / 255 / 0.5 - 1, 1, 1, -1, -1];
    expect(maxAbsDiff(out.data, expected)).toBeLessThan(1e-6);
  });

  it('defaults to the vision tower size (896 unless given) and refuses pan-and-scan', () => {
    expect([new Gemma3ImageProcessor({}).height, new Gemma3ImageProcessor({}, { defaultSize: 32 }).width]).toEqual([
      896, 32,
    ]);
    expect(() => new Gemma3ImageProcessor({ do_pan_and_scan: true })).toThrow(UserError);
  });
});
