// Reading and writing the built-in model's tensors and JSON files on disk, shared by
// its base checkpoint (base-checkpoint.ts) and its PEFT adapters (peft-adapter.ts). Variables are held [in, out] in
// memory and may be stored transposed ([out, in], the torch.nn.Linear layout) on disk.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../core/errors.ts';
import type { NamedTensor } from '../safetensors.ts';
import { z } from 'zod';
import { readJson } from '../../core/files.ts';

export function requireFiles(dir: string, files: readonly string[], what: string): void {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UserError(`${dir}: no such ${what} folder`);
  const missing = files.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) throw new UserError(`${dir}: incomplete ${what} (missing ${missing.join(', ')})`);
}

/** A JSON file whose shape the caller checks with its own schema (core/files.ts readJson does the reading). */
export const readJsonValue = (path: string): unknown => readJson(path, z.unknown());

export function toDisk(variable: tf.Variable, transpose: boolean): NamedTensor {
  const t = transpose ? tf.tidy(() => tf.transpose(variable)) : variable;
  const data = t.dataSync() as Float32Array;
  const shape = t.shape.slice();
  if (transpose) t.dispose();
  return { shape, data: Float32Array.from(data) };
}

export function fromDisk(tensor: NamedTensor, transpose: boolean): tf.Tensor {
  return tf.tidy(() => {
    const t = tf.tensor(tensor.data, tensor.shape);
    return transpose ? tf.transpose(t) : t;
  });
}

export function sameShape(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
