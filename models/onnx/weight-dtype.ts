// The element type an HF decoder's base weights are stored in inside the ONNX Runtime
// graphs. On a GPU a bfloat16 or float16 checkpoint stays 16-bit: the graphs hold its weights in that type and Cast
// each to float32 where a product reads it, so the device holds 2 bytes per parameter and computes and accumulates in
// float32 (one weight's float32 copy exists at a time, for the product that reads it). On the CPU weights are float32
// (ORT's CPU kernels for 16-bit products are slower than float32's, and the host has the room).
// On WebGPU a bfloat16 checkpoint is stored as float16: ORT's WebGPU provider has no bfloat16 Cast, so a bfloat16
// weight's Cast ran on the CPU and its float32 result was uploaded on every run. float16 holds every bfloat16 value of
// magnitude 2^-14 … 65504 exactly (its significand is 3 bits longer); smaller ones round to float16's subnormal
// spacing 2^-24 (an absolute error of at most 2^-25, about 3e-8), and a weight beyond 65504 is refused in one line.
// The sessions of 16-bit graphs keep ORT from folding the Casts back into float32 weights (session.ts sixteenBit).
import { UserError } from '../../core/errors.ts';
import type { Device } from './device.ts';

export type WeightDtype = 'float32' | 'bfloat16' | 'float16';

/** The stored type for a checkpoint whose config.json says `checkpointDtype`, on `device`. */
export function deviceWeightDtype(checkpointDtype: string | null, device: Device | undefined): WeightDtype {
  if (!device || device === 'cpu') return 'float32';
  if (checkpointDtype === 'bfloat16') return device === 'webgpu' ? 'float16' : 'bfloat16';
  return checkpointDtype === 'float16' ? 'float16' : 'float32';
}

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
