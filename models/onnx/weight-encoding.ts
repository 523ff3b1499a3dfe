// The element types a graph's base weights can be stored in (the choice per device is weight-dtype.ts's) and the
// float32 → bfloat16 / float16 encodings the graph builder writes them with: round to nearest even, float16's range
// checked. Its own file so that the graph builder needs nothing of the devices.
import { UserError } from '../../core/errors.ts';

export type WeightDtype = 'float32' | 'bfloat16' | 'float16';

/** The largest finite float16. */
const HALF_MAX = 65504;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** bfloat16 bits of x, rounded to nearest even (exact for a value read from a bfloat16 checkpoint). */
export function floatToBfloat16(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return (bits >>> 16) | 0x40; // NaN stays NaN
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** IEEE half bits of x, rounded to nearest even; beyond ±65504 it is ±infinity, below 2^-24 zero (float16's range). */
export function floatToHalf(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  let mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rounded = (mantissa + half - 1 + ((mantissa >>> shift) & 1)) >>> shift;
    return sign | rounded;
  }
  const rounded = mantissa + 0xfff + ((mantissa >>> 13) & 1);
  if (rounded & 0x800000) return e + 1 >= 0x1f ? sign | 0x7c00 : sign | ((e + 1) << 10);
  return sign | (e << 10) | (rounded >>> 13);
}

/**
 * The 16-bit little-endian bytes of float32 values in `dtype`; a finite value beyond float16's range is a UserError
 * naming the weight (`name`).
 */
export function sixteenBitBytes(values: Float32Array, dtype: 'bfloat16' | 'float16', name = 'a weight'): Uint8Array {
  const out = new Uint16Array(values.length);
  if (dtype === 'bfloat16') for (let i = 0; i < values.length; i++) out[i] = floatToBfloat16(values[i]);
  else
    for (let i = 0; i < values.length; i++) {
      const x = values[i];
      if (Math.abs(x) > HALF_MAX && Number.isFinite(x))
        throw new UserError(
          `${name} holds ${x}, beyond float16's range (±${HALF_MAX}), so it cannot be stored as float16 on this device; use --device cuda or cpu`,
        );
      out[i] = floatToHalf(x);
    }
  return new Uint8Array(out.buffer);
}
