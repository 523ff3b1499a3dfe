// The Gemma 3 image processor, as transformers' PIL-based Gemma3ImageProcessor does it without pan-and-scan: resize to
// `size` (height x width, aspect ratio not kept) with Pillow's filter (BILINEAR by default), rescale 1/255, normalise
// with mean = std = 0.5 (so values land in [-1, 1]), channels first.
//
// Default size: the class default is 224 x 224, but every Gemma 3 checkpoint's SigLIP tower takes 896 x 896 (its
// position embedding has one row per patch of that size), so a config without `size` gets the tower's image_size
// (`defaultSize`, 896 when not given). Pan-and-scan crops are not supported: a config asking for them is refused.
import { z } from 'zod';
import type { RawImage } from '../../core/image.ts';
import { parseOrFail, UserError } from '../../core/errors.ts';
import { filterFromPilCode, resizePil, type ResampleFilter } from '../hf/resample.ts';
import {
  channelValues,
  imageToChannelsFirst,
  stackImages,
  type PixelScaling,
  type PixelValues,
} from '../hf/pixel-values.ts';

/** preprocessor_config.json of a Gemma 3 checkpoint; defaults are Gemma3ImageProcessor's (transformers 4.57) but `size`. */
const gemma3PreprocessorSchema = z.object({
  do_resize: z.boolean().default(true),
  size: z.object({ height: z.number().int().positive(), width: z.number().int().positive() }).optional(),
  resample: z.number().int().default(2),
  do_rescale: z.boolean().default(true),
  rescale_factor: z
    .number()
    .positive()
    .default(1 / 255),
  do_normalize: z.boolean().default(true),
  image_mean: channelValues.default([0.5, 0.5, 0.5]),
  image_std: channelValues.default([0.5, 0.5, 0.5]),
  do_pan_and_scan: z.boolean().nullable().default(null),
});
export type Gemma3PreprocessorConfig = z.output<typeof gemma3PreprocessorSchema>;

export class Gemma3ImageProcessor {
  readonly config: Gemma3PreprocessorConfig;
  readonly filter: ResampleFilter;
  readonly scaling: PixelScaling;
  readonly height: number;
  readonly width: number;

  /**
   * `raw`: the parsed JSON of preprocessor_config.json ({} for the defaults); `defaultSize`: the side used when the
   * config has no `size` (pass the vision config's image_size).
   */
  constructor(raw: unknown, options: { defaultSize?: number; source?: string } = {}) {
    const source = options.source ?? 'preprocessor_config.json';
    this.config = parseOrFail(gemma3PreprocessorSchema, raw ?? {}, `${source}: `);
    if (this.config.do_pan_and_scan)
      throw new UserError(`${source}: do_pan_and_scan is not supported (set it to false or null)`);
    const filter = filterFromPilCode(this.config.resample);
    if (!filter)
      throw new UserError(
        `${source}: resample ${this.config.resample} is not supported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING)`,
      );
    this.filter = filter;
    const side = options.defaultSize ?? 896;
    this.height = this.config.size?.height ?? side;
    this.width = this.config.size?.width ?? side;
    const c = this.config;
    this.scaling = {
      doRescale: c.do_rescale,
      rescaleFactor: c.rescale_factor,
      doNormalize: c.do_normalize,
      imageMean: c.image_mean,
      imageStd: c.image_std,
    };
  }

  /** The resized 8-bit image, before rescaling. */
  resize(image: RawImage): RawImage {
    return this.config.do_resize ? resizePil(image, this.width, this.height, this.filter) : image;
  }

  /** Images (RGB) -> pixel values [n, 3, height, width]. All images must end at the same size (do_resize false: as given). */
  preprocess(images: readonly RawImage[]): PixelValues {
    const resized = images.map((img) => this.resize(img));
    const h = resized[0]?.height ?? this.height;
    const w = resized[0]?.width ?? this.width;
    if (resized.some((img) => img.height !== h || img.width !== w))
      throw new UserError('gemma3 processor: with do_resize false, all images must have the same size');
    return stackImages(
      resized.map((img) => imageToChannelsFirst(img, this.scaling)),
      h,
      w,
    );
  }
}
