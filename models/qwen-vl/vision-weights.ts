// Reading a Qwen-VL vision tower's tensors from a checkpoint: which of the two on-disk prefixes the file uses
// (`visual.*`, the Hub's Qwen2.5-VL names that transformers 4.57 and v5.2 still write for it, or `model.visual.*`, the
// in-memory names Qwen3-VL's files have), each tensor's shape checked against the config, nn.Linear weights transposed
// to [in, out], and the Conv3d patch kernel [D, C, T, P, P] as the matrix [C·T·P·P, D] that multiplies a pixel row.
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../core/errors.ts';
import type { HostTensor, TensorLookup } from '../vision/siglip.ts';
import type { QwenLayerNorm, QwenLinear } from './vision-ops.ts';

/** The prefixes a Qwen-VL vision tower's tensors carry on disk, the newer layout first. */
const PREFIXES = ['model.visual.', 'visual.'] as const;

/** The prefix under which `get` finds the tower (its patch embedding), or a UserError naming both. */
export function visionPrefix(get: TensorLookup, source: string): string {
  const found = PREFIXES.find((p) => get(`${p}patch_embed.proj.weight`) !== undefined);
  if (!found)
    throw new UserError(
      `${source}: no vision tower (neither ${PREFIXES.map((p) => `${p}patch_embed.proj.weight`).join(' nor ')})`,
    );
  return found;
}

/** A row-major [rows, cols] matrix transposed into a [cols, rows] tensor. */
function transposed(data: Float32Array, rows: number, cols: number): tf.Tensor2D {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return tf.tensor2d(out, [cols, rows]);
}

/** Readers of one tower's tensors under `prefix`, each checking the shape the config implies. */
export function weightReader(get: TensorLookup, prefix: string, source: string) {
  const take = (name: string, shape: number[]): HostTensor => {
    const t = get(prefix + name);
    if (!t) throw new UserError(`${source}: tensor ${prefix + name} is missing`);
    if (t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i]))
      throw new UserError(`${source}: tensor ${prefix + name} has shape [${t.shape}], config.json implies [${shape}]`);
    return t;
  };
  const vector = (name: string, n: number): tf.Tensor1D => tf.tensor1d(take(name, [n]).data);
  return {
    vector,
    matrix: (name: string, rows: number, cols: number): tf.Tensor2D =>
      tf.tensor2d(take(name, [rows, cols]).data, [rows, cols]),
    /** nn.Linear `${name}.weight` [out, in] (and `.bias` [out]) as [in, out]. */
    linear: (name: string, inDim: number, outDim: number, bias = true): QwenLinear => ({
      weight: transposed(take(`${name}.weight`, [outDim, inDim]).data, outDim, inDim),
      bias: bias ? vector(`${name}.bias`, outDim) : null,
    }),
    layerNorm: (name: string, n: number): QwenLayerNorm => ({
      weight: vector(`${name}.weight`, n),
      bias: vector(`${name}.bias`, n),
    }),
    /** patch_embed.proj: Conv3d [D, C, T, P, P] (row-major = [D, C·T·P·P]) as [C·T·P·P, D]. */
    patchKernel: (D: number, C: number, T: number, P: number, bias: boolean): QwenLinear => ({
      weight: transposed(take('patch_embed.proj.weight', [D, C, T, P, P]).data, D, C * T * P * P),
      bias: bias ? vector('patch_embed.proj.bias', D) : null,
    }),
  };
}

/** Dispose every tensor of a weights object (nested objects and arrays). */
export function disposeWeights(weights: object): void {
  const walk = (v: unknown) => {
    if (v instanceof tf.Tensor) v.dispose();
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(weights);
}
