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
import type { Device } from './device.ts';
import type { WeightDtype } from './weight-encoding.ts';

/** The stored type for a checkpoint whose config.json says `checkpointDtype`, on `device`. */
export function deviceWeightDtype(checkpointDtype: string | null, device: Device | undefined): WeightDtype {
  if (!device || device === 'cpu') return 'float32';
  if (checkpointDtype === 'bfloat16') return device === 'webgpu' ? 'float16' : 'bfloat16';
  return checkpointDtype === 'float16' ? 'float16' : 'float32';
}
