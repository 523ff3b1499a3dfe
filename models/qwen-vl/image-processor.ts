// The image processor of Qwen2.5-VL and Qwen3-VL: transformers' PIL-based Qwen2VLImageProcessor (4.57 and v5.2
// image_processing_qwen2_vl.py, the class the fixtures pin). Per image: smart_resize to multiples of patch × merge
// (smart-resize.ts), Pillow BICUBIC on the 8-bit RGB image (always, also at the same size), rescale and normalise
// (models/hf/pixel-values.ts), the frame repeated to fill one temporal patch, then the patches flattened into rows:
//
//   [T, C, H, W] → (t, T, C, gh/m, m, P, gw/m, m, P) → permute (t, gh/m, gw/m, m, m, C, T, P, P) → [gh·gw, C·T·P·P]
//
// so rows run over 2×2 merge blocks (block row, block column, row in block, column in block) and each row holds
// (channel, frame, y, x): the Conv3d kernel's order. Several images are concatenated, image 0's rows first, with one
// (1, gh, gw) grid each. transformers' torchvision "fast" class (Qwen2VLImageProcessorFast, what AutoImageProcessor
// picks when torchvision is installed) resizes with torchvision's antialiased bicubic instead of Pillow and gives
// pixel values a few levels apart on some pixels; this is the PIL one (docs/hugging-face.md).
import { z } from 'zod';
import type { RawImage } from '../../core/image.ts';
import { parseOrFail, UserError } from '../../core/errors.ts';
import { filterFromPilCode, resizePil, type ResampleFilter } from '../hf/resample.ts';
import { channelValues, imageToChannelsFirst, type PixelScaling } from '../hf/pixel-values.ts';
import type { GridThw } from './grid.ts';
import { smartResize } from './smart-resize.ts';

const OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
const OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711] as const;

const positiveInt = z.number().int().positive();

/** preprocessor_config.json of a Qwen-VL checkpoint; defaults are Qwen2VLImageProcessor's (transformers 4.57). */
const qwenPreprocessorSchema = z.object({
  do_resize: z.boolean().default(true),
  size: z.object({ shortest_edge: positiveInt, longest_edge: positiveInt }).optional(),
  min_pixels: positiveInt.nullable().optional(),
  max_pixels: positiveInt.nullable().optional(),
  resample: z.number().int().default(3),
  do_rescale: z.boolean().default(true),
  rescale_factor: z
    .number()
    .positive()
    .default(1 / 255),
  do_normalize: z.boolean().default(true),
  image_mean: channelValues.default([...OPENAI_CLIP_MEAN]),
  image_std: channelValues.default([...OPENAI_CLIP_STD]),
  patch_size: positiveInt.default(14),
  temporal_patch_size: positiveInt.default(2),
  merge_size: positiveInt.default(2),
});

/** The vision tower's side of the contract: the processor's patch, temporal patch and merge sizes must equal these. */
interface TowerPatching {
  patchSize: number;
  temporalPatchSize: number;
  spatialMergeSize: number;
}

/** Processed images: every image's patch rows, image 0 first, and one grid per image. */
export interface QwenPixelValues {
  /** [rows, C·T·P·P] row-major (see the header for the order). */
  data: Float32Array;
  rows: number;
  /** C·T·P·P. */
  width: number;
  grids: GridThw[];
}

export class QwenVlImageProcessor {
  readonly patchSize: number;
  readonly temporalPatchSize: number;
  readonly mergeSize: number;
  /** The pixel budget smart_resize keeps every image within. */
  readonly minPixels: number;
  readonly maxPixels: number;
  readonly doResize: boolean;
  readonly filter: ResampleFilter;
  readonly scaling: PixelScaling;

  /**
   * `raw`: the parsed preprocessor_config.json ({} for the class defaults); `source` names it in errors. `tower`, when
   * given, is the vision config the pixel rows feed: its patch, temporal patch and merge sizes must be the processor's.
   *
   * The pixel budget: min_pixels / max_pixels where given, else size.shortest_edge / size.longest_edge, else
   * 3136 / 1003520 (transformers v5; 4.57's PIL class ignores `size` and keeps 3136 / 1003520 unless min_pixels /
   * max_pixels are given, which the Hub's Qwen2.5-VL files are; the fast class and v5 read `size`).
   */
  constructor(raw: unknown, source = 'preprocessor_config.json', tower?: TowerPatching) {
    const c = parseOrFail(qwenPreprocessorSchema, raw ?? {}, `${source}: `);
    this.patchSize = c.patch_size;
    this.temporalPatchSize = c.temporal_patch_size;
    this.mergeSize = c.merge_size;
    this.minPixels = c.min_pixels ?? c.size?.shortest_edge ?? 56 * 56;
    this.maxPixels = c.max_pixels ?? c.size?.longest_edge ?? 28 * 28 * 1280;
    if (this.minPixels > this.maxPixels)
      throw new UserError(`${source}: the minimum pixel count ${this.minPixels} exceeds the maximum ${this.maxPixels}`);
    this.doResize = c.do_resize;
    const filter = filterFromPilCode(c.resample);
    if (!filter)
      throw new UserError(
        `${source}: resample ${c.resample} is not supported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING)`,
      );
    this.filter = filter;
    this.scaling = {
      doRescale: c.do_rescale,
      rescaleFactor: c.rescale_factor,
      doNormalize: c.do_normalize,
      imageMean: c.image_mean,
      imageStd: c.image_std,
    };
    if (tower) {
      const pairs: [string, number, number][] = [
        ['patch_size', c.patch_size, tower.patchSize],
        ['temporal_patch_size', c.temporal_patch_size, tower.temporalPatchSize],
        ['merge_size', c.merge_size, tower.spatialMergeSize],
      ];
      for (const [key, mine, theirs] of pairs)
        if (mine !== theirs)
          throw new UserError(`${source}: ${key} ${mine} differs from the vision tower's ${theirs} (config.json)`);
    }
  }

  /** smart_resize factor: one merge block's side in pixels. */
  get factor(): number {
    return this.patchSize * this.mergeSize;
  }

  /** [height, width] an image of this size is processed at. */
  resizedSize(height: number, width: number): [number, number] {
    if (this.doResize) return smartResize(height, width, this.factor, this.minPixels, this.maxPixels);
    if (height % this.factor !== 0 || width % this.factor !== 0)
      throw new UserError(
        `an image of ${width}x${height} pixels is not made of whole ${this.factor}-pixel merge blocks, and do_resize is false`,
      );
    return [height, width];
  }

  /** The resized 8-bit image (Pillow's filter; a copy when the size does not change, as Pillow returns one). */
  resize(image: RawImage): RawImage {
    const [h, w] = this.resizedSize(image.height, image.width);
    return this.doResize ? resizePil(image, w, h, this.filter) : image;
  }

  /** Images → pixel_values rows and image_grid_thw (see the header). */
  preprocess(images: readonly RawImage[]): QwenPixelValues {
    const P = this.patchSize;
    const T = this.temporalPatchSize;
    const m = this.mergeSize;
    const width = 3 * T * P * P;
    const parts: Float32Array[] = [];
    const grids: GridThw[] = [];
    let rows = 0;
    for (const image of images) {
      const resized = this.resize(image);
      const chw = imageToChannelsFirst(resized, this.scaling); // [3, H, W]
      const gh = resized.height / P;
      const gw = resized.width / P;
      parts.push(flattenPatches(chw, resized.height, resized.width, P, T, m));
      grids.push([1, gh, gw]);
      rows += gh * gw;
    }
    const data = new Float32Array(rows * width);
    let offset = 0;
    for (const part of parts) {
      data.set(part, offset);
      offset += part.length;
    }
    return { data, rows, width, grids };
  }
}

/**
 * One image [3, H, W] → its patch rows [gh·gw, 3·T·P·P]: row (block row, block column, row in block, column in
 * block), column (channel, frame, y, x), the frames being T copies of the image.
 */
function flattenPatches(chw: Float32Array, H: number, W: number, P: number, T: number, m: number): Float32Array {
  const gh = H / P;
  const gw = W / P;
  const width = 3 * T * P * P;
  const out = new Float32Array(gh * gw * width);
  let o = 0;
  for (let br = 0; br < gh / m; br++)
    for (let bc = 0; bc < gw / m; bc++)
      for (let r = 0; r < m; r++)
        for (let c = 0; c < m; c++) {
          const top = (br * m + r) * P;
          const left = (bc * m + c) * P;
          for (let ch = 0; ch < 3; ch++)
            for (let t = 0; t < T; t++)
              for (let y = 0; y < P; y++) {
                const base = ch * H * W + (top + y) * W + left;
                for (let x = 0; x < P; x++) out[o++] = chw[base + x];
              }
        }
  return out;
}
