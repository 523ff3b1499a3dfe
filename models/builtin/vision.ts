// How images enter the built-in model: an RGB image is resized to imageSize × imageSize (environments already render
// at that size, so usually this is a copy) and cut into patchSize × patchSize patches in reading order; each patch is
// flattened (rows, then columns, then RGB) into values in [0, 1]. The transformer projects each patch with a learned
// linear map and adds a learned per-patch position embedding (models/builtin/transformer.ts).
import type { RawImage } from '../../core/image.ts';
import { patchesPerImage, patchDim, type Architecture } from './config.ts';

/** Bilinear resize of an RGB image (pure JS; only used when an image arrives at another size). */
export function resizeImage(image: RawImage, width: number, height: number): RawImage {
  if (image.width === width && image.height === height) return image;
  const out = new Uint8Array(width * height * 3);
  const sx = image.width / width;
  const sy = image.height / height;
  for (let y = 0; y < height; y++) {
    const fy = Math.max(0, (y + 0.5) * sy - 0.5);
    const y0 = Math.min(image.height - 1, Math.floor(fy));
    const y1 = Math.min(image.height - 1, y0 + 1);
    const wy = fy - y0;
    for (let x = 0; x < width; x++) {
      const fx = Math.max(0, (x + 0.5) * sx - 0.5);
      const x0 = Math.min(image.width - 1, Math.floor(fx));
      const x1 = Math.min(image.width - 1, x0 + 1);
      const wx = fx - x0;
      for (let c = 0; c < 3; c++) {
        const p = (yy: number, xx: number) => image.data[(yy * image.width + xx) * 3 + c];
        const top = p(y0, x0) * (1 - wx) + p(y0, x1) * wx;
        const bottom = p(y1, x0) * (1 - wx) + p(y1, x1) * wx;
        out[(y * width + x) * 3 + c] = Math.round(top * (1 - wy) + bottom * wy);
      }
    }
  }
  return { width, height, channels: 3, data: out };
}

/** Patch pixel values of one image: [patchesPerImage * patchDim], scaled to [0, 1]. */
export function imageToPatches(image: RawImage, arch: Architecture): Float32Array {
  const size = arch.imageSize;
  const ps = arch.patchSize;
  const img = resizeImage(image, size, size);
  const grid = size / ps;
  const out = new Float32Array(patchesPerImage(arch) * patchDim(arch));
  let o = 0;
  for (let gy = 0; gy < grid; gy++) {
    for (let gx = 0; gx < grid; gx++) {
      for (let y = 0; y < ps; y++) {
        const row = ((gy * ps + y) * size + gx * ps) * 3;
        for (let i = 0; i < ps * 3; i++) out[o++] = img.data[row + i] / 255;
      }
    }
  }
  return out;
}
