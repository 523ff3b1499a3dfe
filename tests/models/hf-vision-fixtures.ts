// Test helpers for the Hugging Face vision fixtures in ../shared/fixtures/hf, read in place: a reader for the
// reference files (F32, plus the U8 intermediates of the preprocessing reference, which models/safetensors.ts does not
// read), the model weights through models/safetensors.ts, and a max-abs-difference helper.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { SHARED_DIR } from '../../core/paths.ts';
import { decodeSafetensors } from '../../models/safetensors.ts';
import type { HostTensor, TensorLookup } from '../../models/vision/siglip.ts';

export const HF_FIXTURES = join(SHARED_DIR, 'fixtures', 'hf');

export interface FixtureTensor {
  shape: number[];
  dtype: string;
  data: Float32Array | Uint8Array;
}

/** Every F32 and U8 tensor of a reference.safetensors (other dtypes, like the I64 masks, are skipped). */
export function readFixtureTensors(path: string): Map<string, FixtureTensor> {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const out = new Map<string, FixtureTensor>();
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const raw = bytes.subarray(8 + n + e.data_offsets[0], 8 + n + e.data_offsets[1]);
    if (e.dtype === 'F32') {
      const data = new Float32Array(raw.length / 4);
      for (let i = 0; i < data.length; i++) data[i] = raw.readFloatLE(i * 4);
      out.set(name, { shape: e.shape, dtype: e.dtype, data });
    } else if (e.dtype === 'U8') {
      out.set(name, { shape: e.shape, dtype: e.dtype, data: Uint8Array.from(raw) });
    }
  }
  return out;
}

/** A fixture's model.safetensors as a lookup by on-disk name. */
export function modelWeights(folder: string): TensorLookup {
  const file = decodeSafetensors(
    readFileSync(join(HF_FIXTURES, folder, 'model.safetensors')),
    `${folder}/model.safetensors`,
  );
  return (name: string): HostTensor | undefined => file.tensors.get(name);
}

export function readJson(...parts: string[]): unknown {
  return JSON.parse(readFileSync(join(HF_FIXTURES, ...parts), 'utf8'));
}

/** max |a - b| over two equally long arrays (throws on a length mismatch, so a wrong shape cannot pass). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** A tensor's values, then dispose it. */
export function values(t: tf.Tensor): Float32Array {
  const v = t.dataSync() as Float32Array;
  t.dispose();
  return v;
}
