// The Idefics3 (SmolVLM) image processor without image splitting, as transformers' PIL-based Idefics3ImageProcessor
// does it: resize so the longest edge is `size.longest_edge` (the short edge rounded up to even), resize that to the
// square `max_image_size.longest_edge` (the vision encoder's input; the aspect ratio is not kept), both with Pillow's
// filter (LANCZOS by default), then rescale and normalise.
//
// Splitting (a grid of tiles plus a global image) is not supported: every image becomes one square image, and the
// prompt uses the no-splitting layout `<fake_token_around_image><global-img><image>×N<fake_token_around_image>`.
// A config that asks for splitting (SmolVLM's own files do) is still read; `splitting` reports that it was ignored.
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

const longestEdge = z.object({ longest_edge: z.number().int().positive() });

/** preprocessor_config.json of an Idefics3 checkpoint; defaults are Idefics3ImageProcessor's (transformers 4.57). */
const idefics3PreprocessorSchema = z.object({
  do_resize: z.boolean().default(true),
  size: longestEdge.default({ longest_edge: 4 * 364 }),
  max_image_size: longestEdge.default({ longest_edge: 364 }),
  resample: z.number().int().default(1),
  do_image_splitting: z.boolean().default(true),
  do_rescale: z.boolean().default(true),
  rescale_factor: z
    .number()
    .positive()
    .default(1 / 255),
  do_normalize: z.boolean().default(true),
  image_mean: channelValues.default([0.5, 0.5, 0.5]),
  image_std: channelValues.default([0.5, 0.5, 0.5]),
});
export type Idefics3PreprocessorConfig = z.output<typeof idefics3PreprocessorSchema>;

/** Transformers' cap on the first resize (`_resize_output_size_scale_below_upper_bound`). */
const MAX_IMAGE_SIZE = 4096;

/**
 * Size after the first resize: the longest edge becomes `longest`, the other keeps the aspect ratio (truncated) and is
 * bumped to the next even number, then both are capped at 4096. Returns [height, width].
 */
export function idefics3ResizeSize(height: number, width: number, longest: number): [number, number] {
  const aspect = width / height;
  let h: number;
  let w: number;
  if (width >= height) {
    w = longest;
    h = Math.trunc(w / aspect);
    if (h % 2 !== 0) h += 1;
  } else {
    h = longest;
    w = Math.trunc(h * aspect);
    if (w % 2 !== 0) w += 1;
  }
  h = Math.max(h, 1);
  w = Math.max(w, 1);
  const capped = w / h;
  if (w >= h && w > MAX_IMAGE_SIZE) {
    w = MAX_IMAGE_SIZE;
    h = Math.trunc(w / capped);
  } else if (h > w && h > MAX_IMAGE_SIZE) {
    h = MAX_IMAGE_SIZE;
    w = Math.trunc(h * capped);
  }
  return [Math.max(h, 1), Math.max(w, 1)];
}

export class Idefics3ImageProcessor {
  readonly config: Idefics3PreprocessorConfig;
  readonly filter: ResampleFilter;
  readonly scaling: PixelScaling;

  /**
   * `raw`: the parsed JSON of preprocessor_config.json ({} for the class defaults); `source` names it in errors.
   * `visionImageSize` (the vision config's image_size) replaces the class defaults of the sizes when the config has
   * none (max_image_size = image_size, size = 4 × image_size, the class's own ratio) and must equal max_image_size when
   * it has one: the tower's position table fits only that size.
   */
  constructor(raw: unknown, source = 'preprocessor_config.json', visionImageSize?: number) {
    const given = (raw ?? {}) as Record<string, unknown>;
    const withDefaults =
      visionImageSize !== undefined && given !== null && typeof given === 'object' && !Array.isArray(given)
        ? { size: { longest_edge: 4 * visionImageSize }, max_image_size: { longest_edge: visionImageSize }, ...given }
        : given;
    this.config = parseOrFail(idefics3PreprocessorSchema, withDefaults, `${source}: `);
    if (visionImageSize !== undefined && this.config.max_image_size.longest_edge !== visionImageSize) {
      throw new UserError(
        `${source}: max_image_size.longest_edge ${this.config.max_image_size.longest_edge} differs from the vision tower's image_size ${visionImageSize}`,
      );
    }
    const filter = filterFromPilCode(this.config.resample);
    if (!filter)
      throw new UserError(
        `${source}: resample ${this.config.resample} is not supported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING)`,
      );
    this.filter = filter;
    const c = this.config;
    this.scaling = {
      doRescale: c.do_rescale,
      rescaleFactor: c.rescale_factor,
      doNormalize: c.do_normalize,
      imageMean: c.image_mean,
      imageStd: c.image_std,
    };
  }

  /** True when the config asked for splitting, which this processor does not do (see the header). */
  get splitting(): boolean {
    return this.config.do_image_splitting;
  }

  /** The square side every image ends at (the vision encoder's input size). */
  get imageSize(): number {
    return this.config.max_image_size.longest_edge;
  }

  /** The resized 8-bit image (both resizes), before rescaling: for tests and debugging. */
  resize(image: RawImage): RawImage {
    let img = image;
    if (this.config.do_resize) {
      const [h, w] = idefics3ResizeSize(img.height, img.width, this.config.size.longest_edge);
      img = resizePil(img, w, h, this.filter);
    }
    return resizePil(img, this.imageSize, this.imageSize, this.filter);
  }

  /** Images (RGB, already decoded) -> pixel values [n, 3, S, S], S = max_image_size.longest_edge. */
  preprocess(images: readonly RawImage[]): PixelValues {
    const side = this.imageSize;
    return stackImages(
      images.map((img) => imageToChannelsFirst(this.resize(img), this.scaling)),
      side,
      side,
    );
  }
}
