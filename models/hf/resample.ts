// Pillow's `Image.resize` for 8-bit RGB images, bit for bit (Pillow 9.4, libImaging/Resample.c), because the Hugging
// Face image processors (Idefics3, Gemma 3, SigLIP) resize through Pillow and their pixel values are the model's input.
//
// The algorithm is a separable convolution: a horizontal pass (only over the rows the vertical pass will read), its
// output rounded and clipped to 8 bits, then a vertical pass. For each output pixel, the filter (LANCZOS, BILINEAR,
// BICUBIC, BOX, HAMMING) is stretched by the scale when downsampling, its weights are computed in double precision,
// normalised to sum to 1, and turned into fixed point with 22 fractional bits; a pixel is the rounded fixed-point sum
// clipped to 0..255. Any other order of rounding gives values that differ by one level here and there, and one level
// is 2/255 after normalisation, far beyond the 1e-4 the fixtures allow.
import type { RawImage } from '../../core/image.ts';

/** PIL's resampling codes as they appear in preprocessor_config.json ("resample": 1 = LANCZOS). */
const PIL_RESAMPLE = { NEAREST: 0, LANCZOS: 1, BILINEAR: 2, BICUBIC: 3, BOX: 4, HAMMING: 5 } as const;
export type ResampleFilter = 'lanczos' | 'bilinear' | 'bicubic' | 'box' | 'hamming';

interface Filter {
  support: number;
  weight: (x: number) => number;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = x * Math.PI;
  return Math.sin(px) / px;
}

// The filters exactly as Resample.c states them (support in input pixels at scale 1).
const FILTERS: Record<ResampleFilter, Filter> = {
  box: { support: 0.5, weight: (x) => (x > -0.5 && x <= 0.5 ? 1 : 0) },
  bilinear: {
    support: 1,
    weight: (x) => {
      const a = Math.abs(x);
      return a < 1 ? 1 - a : 0;
    },
  },
  hamming: {
    support: 1,
    weight: (x) => {
      const a = Math.abs(x);
      if (a === 0) return 1;
      if (a >= 1) return 0;
      const px = a * Math.PI;
      return (Math.sin(px) / px) * (0.54 + 0.46 * Math.cos(px));
    },
  },
  bicubic: {
    // Keys cubic with a = -0.5.
    support: 2,
    weight: (x) => {
      const a = -0.5;
      const t = Math.abs(x);
      if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
      if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
      return 0;
    },
  },
  lanczos: { support: 3, weight: (x) => (x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0) },
};

/** Map a preprocessor_config.json `resample` code to a filter; NEAREST is not supported (no processor here uses it). */
export function filterFromPilCode(code: number): ResampleFilter | null {
  switch (code) {
    case PIL_RESAMPLE.LANCZOS:
      return 'lanczos';
    case PIL_RESAMPLE.BILINEAR:
      return 'bilinear';
    case PIL_RESAMPLE.BICUBIC:
      return 'bicubic';
    case PIL_RESAMPLE.BOX:
      return 'box';
    case PIL_RESAMPLE.HAMMING:
      return 'hamming';
    default:
      return null;
  }
}

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;
const HALF = 2 ** (PRECISION_BITS - 1);
const CLIP_HIGH = 2 ** (PRECISION_BITS + 8);

/** For each output pixel: the first input pixel it reads, how many, and their fixed-point weights (row-major, ksize wide). */
interface Coefficients {
  start: Int32Array;
  count: Int32Array;
  ksize: number;
  weights: Int32Array;
}

/** Resample.c's precompute_coeffs + normalize_coeffs_8bpc for one axis (in0 = 0, in1 = inSize: no crop box). */
function coefficients(inSize: number, outSize: number, filter: Filter): Coefficients {
  const scale = inSize / outSize;
  const filterscale = Math.max(scale, 1);
  const support = filter.support * filterscale;
  const ksize = Math.ceil(support) * 2 + 1;
  const start = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Int32Array(outSize * ksize);
  const k = new Float64Array(ksize);
  const ss = 1 / filterscale;
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    // C's (int) cast truncates toward zero, as Math.trunc does.
    let xmin = Math.trunc(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    let xmax = Math.trunc(center + support + 0.5);
    if (xmax > inSize) xmax = inSize;
    xmax -= xmin;
    let total = 0;
    for (let x = 0; x < xmax; x++) {
      const w = filter.weight((x + xmin - center + 0.5) * ss);
      k[x] = w;
      total += w; // sequential double sum, as in the C loop
    }
    for (let x = 0; x < xmax; x++) {
      const w = total !== 0 ? k[x] / total : k[x];
      weights[xx * ksize + x] = w < 0 ? Math.trunc(-0.5 + w * ONE) : Math.trunc(0.5 + w * ONE);
    }
    start[xx] = xmin;
    count[xx] = xmax;
  }
  return { start, count, ksize, weights };
}

/** Fixed-point sum -> 8 bits: Resample.c's clip8 (arithmetic shift, clipped to 0..255). */
function clip8(acc: number): number {
  if (acc >= CLIP_HIGH) return 255;
  if (acc <= 0) return 0;
  return Math.floor(acc / ONE);
}

/**
 * Resize an 8-bit RGB image like Pillow 9.4's `Image.resize((width, height), resample)` (no box, no reducing_gap).
 * Sums are exact in doubles (|sum| < 2^31, as in Pillow's int accumulator).
 */
export function resizePil(image: RawImage, width: number, height: number, filterName: ResampleFilter): RawImage {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
    throw new Error(`resizePil: target size ${width}x${height} must be positive integers`);
  }
  if (image.width === width && image.height === height) return { ...image, data: image.data.slice() };
  const filter = FILTERS[filterName];
  const horizontal = coefficients(image.width, width, filter);
  const vertical = coefficients(image.height, height, filter);
  const needH = width !== image.width;
  const needV = height !== image.height;

  let src = image.data;
  let srcWidth = image.width;
  let rowOffset = 0; // the first input row the vertical pass reads (only those rows go through the horizontal pass)
  if (needH) {
    // Rows the vertical pass will read: from the first output row's first input row to the last output row's last.
    const first = needV ? vertical.start[0] : 0;
    const last = needV ? vertical.start[height - 1] + vertical.count[height - 1] : image.height;
    const rows = last - first;
    const tmp = new Uint8Array(rows * width * 3);
    const { start, count, ksize, weights } = horizontal;
    for (let y = 0; y < rows; y++) {
      const inRow = (y + first) * image.width * 3;
      const outRow = y * width * 3;
      for (let xx = 0; xx < width; xx++) {
        const base = xx * ksize;
        let r = HALF;
        let g = HALF;
        let b = HALF;
        for (let x = 0, p = inRow + start[xx] * 3; x < count[xx]; x++, p += 3) {
          const w = weights[base + x];
          r += src[p] * w;
          g += src[p + 1] * w;
          b += src[p + 2] * w;
        }
        const o = outRow + xx * 3;
        tmp[o] = clip8(r);
        tmp[o + 1] = clip8(g);
        tmp[o + 2] = clip8(b);
      }
    }
    src = tmp;
    srcWidth = width;
    rowOffset = first;
  }
  if (!needV) return { width, height, channels: 3, data: src };
  const out = new Uint8Array(width * height * 3);
  const { start, count, ksize, weights } = vertical;
  const stride = srcWidth * 3;
  const acc = new Float64Array(stride);
  for (let yy = 0; yy < height; yy++) {
    // Whole rows at a time (sequential memory): acc[i] = HALF + Σ_y src[row y0 + y][i] · w_y.
    acc.fill(HALF);
    const base = yy * ksize;
    const y0 = start[yy] - rowOffset;
    for (let y = 0; y < count[yy]; y++) {
      const w = weights[base + y];
      const row = (y0 + y) * stride;
      for (let i = 0; i < stride; i++) acc[i] += src[row + i] * w;
    }
    const o = yy * stride;
    for (let i = 0; i < stride; i++) out[o + i] = clip8(acc[i]);
  }
  return { width, height, channels: 3, data: out };
}
