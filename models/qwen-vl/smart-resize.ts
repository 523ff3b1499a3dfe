// smart_resize, the size rule of Qwen2-VL's image processor (Qwen2-VL, Qwen2.5-VL, Qwen3-VL; transformers 4.57 and
// v5.2 image_processing_qwen2_vl.py): both sides become multiples of factor = patch_size · merge_size, as close to the
// original as that allows, then the whole image is scaled into [min_pixels, max_pixels] keeping the aspect ratio.
//
//   h' = round(h / factor) · factor  (same for w), with Python's round: halves go to the even neighbour
//   h'·w' > max_pixels: β = sqrt(h·w / max_pixels), h' = max(factor, floor(h / β / factor) · factor)
//   h'·w' < min_pixels: β = sqrt(min_pixels / (h·w)), h' = ceil(h · β / factor) · factor
//
// Round-half-to-even matters: an image side that is an odd multiple of factor / 2 (42 px at factor 28) rounds down
// where round-half-up would round up, giving a different grid and a different number of image tokens.
import { UserError } from '../../core/errors.ts';

/** Python 3's round(x) for a float: nearest integer, exact halves to the even one. */
function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor; // exact: x and floor are within one binade's worth of integers of each other
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** [height, width] an image of `height` × `width` pixels is resized to. */
export function smartResize(
  height: number,
  width: number,
  factor: number,
  minPixels: number,
  maxPixels: number,
): [number, number] {
  if (Math.max(height, width) / Math.min(height, width) > 200)
    throw new UserError(
      `an image of ${width}x${height} pixels has an aspect ratio above 200, which Qwen-VL image processors refuse`,
    );
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return [h, w];
}
