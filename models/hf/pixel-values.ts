// The last steps every Hugging Face image processor shares: 8-bit RGB -> rescale -> normalise -> channels first, with
// the same float rounding as transformers' numpy code (rescale in float64 then cast to float32; normalise in float32).
// The resize before it is the processor's own (models/<arch>/processor.ts).
import { z } from 'zod';
import type { RawImage } from '../../core/image.ts';

/** A batch of processed images: `data` holds [n, channels, height, width] float32 values, row-major. */
export interface PixelValues {
  data: Float32Array;
  shape: [number, number, number, number];
}

/** How the pixel values are scaled (the preprocessor_config.json fields of the same names). */
export interface PixelScaling {
  doRescale: boolean;
  rescaleFactor: number;
  doNormalize: boolean;
  imageMean: readonly [number, number, number];
  imageStd: readonly [number, number, number];
}

/** `image_mean` / `image_std`: a number (every channel) or one number per RGB channel. */
export const channelValues = z
  .union([z.number(), z.array(z.number()).length(3)])
  .transform((v): [number, number, number] => (typeof v === 'number' ? [v, v, v] : [v[0], v[1], v[2]]));

/** One image, already at the model's size, as [3, H, W] float32 values. */
export function imageToChannelsFirst(image: RawImage, scaling: PixelScaling): Float32Array {
  const { width, height, data } = image;
  const plane = width * height;
  const out = new Float32Array(3 * plane);
  const f32 = Math.fround;
  const mean = scaling.imageMean.map(f32);
  const std = scaling.imageStd.map(f32);
  for (let p = 0; p < plane; p++) {
    for (let c = 0; c < 3; c++) {
      // float64(u8) * factor, then float32 (transformers' rescale), then (x - mean) / std in float32.
      let x = scaling.doRescale ? f32(data[p * 3 + c] * scaling.rescaleFactor) : data[p * 3 + c];
      if (scaling.doNormalize) x = f32(f32(x - mean[c]) / std[c]);
      out[c * plane + p] = x;
    }
  }
  return out;
}

/** Stack same-sized [3, H, W] images into one batch. */
export function stackImages(images: Float32Array[], height: number, width: number): PixelValues {
  const size = 3 * height * width;
  const data = new Float32Array(images.length * size);
  images.forEach((img, i) => data.set(img, i * size));
  return { data, shape: [images.length, 3, height, width] };
}
