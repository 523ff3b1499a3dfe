// The built-in model's parameters: creation from a seeded Rng and the Hugging Face-style name of every tensor.
// Linear weights are held as [in, out] so the forward pass multiplies without transposing; on disk they follow the
// PyTorch nn.Linear convention [out, in] (weights.transposeOnDisk), so other tools read the checkpoint naturally.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../core/rng.ts';
import { patchDim, patchesPerImage, type Architecture } from './config.ts';

const PROJECTIONS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'] as const;
export type Projection = (typeof PROJECTIONS)[number];

export interface LayerWeights {
  attnNorm: tf.Variable; // [d]
  proj: Record<Projection, tf.Variable>; // q,k,v,o: [d, d]; up: [d, dMlp]; down: [dMlp, d]
  mlpNorm: tf.Variable; // [d]
}

export interface ModelWeights {
  embed: tf.Variable; // [vocab, d]
  patchProj: tf.Variable; // [patchDim, d]
  patchBias: tf.Variable; // [d]
  patchPos: tf.Variable; // [patchesPerImage, d]
  layers: LayerWeights[];
  finalNorm: tf.Variable; // [d]
  lmHead: tf.Variable; // [d, vocab]
}

export interface WeightEntry {
  name: string;
  variable: tf.Variable;
  /** Stored transposed on disk (a linear layer's [in, out] becomes [out, in]). */
  transposeOnDisk: boolean;
}

/** Module path of a projection, as in Hugging Face Llama-style models and PEFT target names. */
export function projectionModule(layer: number, projection: Projection): string {
  const block = projection === 'up_proj' || projection === 'down_proj' ? 'mlp' : 'self_attn';
  return `model.layers.${layer}.${block}.${projection}`;
}

function normal(rng: Rng, shape: number[], std: number): tf.Variable {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = rng.normal() * std;
  return tf.variable(tf.tensor(data, shape), true);
}

const ones = (n: number): tf.Variable => tf.variable(tf.ones([n]), true);

/** Fresh weights: GPT-2 style initialisation (std 0.02, residual output projections scaled by 1/sqrt(2L)). */
export function initWeights(arch: Architecture, rng: Rng): ModelWeights {
  const d = arch.dModel;
  const residualStd = 0.02 / Math.sqrt(2 * arch.nLayers);
  const layers: LayerWeights[] = [];
  for (let i = 0; i < arch.nLayers; i++) {
    layers.push({
      attnNorm: ones(d),
      proj: {
        q_proj: normal(rng, [d, d], 0.02),
        k_proj: normal(rng, [d, d], 0.02),
        v_proj: normal(rng, [d, d], 0.02),
        o_proj: normal(rng, [d, d], residualStd),
        up_proj: normal(rng, [d, arch.dMlp], 0.02),
        down_proj: normal(rng, [arch.dMlp, d], residualStd),
      },
      mlpNorm: ones(d),
    });
  }
  return {
    embed: normal(rng, [arch.vocabSize, d], 0.02),
    patchProj: normal(rng, [patchDim(arch), d], 1 / Math.sqrt(patchDim(arch))),
    patchBias: tf.variable(tf.zeros([d]), true),
    patchPos: normal(rng, [patchesPerImage(arch), d], 0.02),
    layers,
    finalNorm: ones(d),
    lmHead: normal(rng, [d, arch.vocabSize], 0.02),
  };
}

/**
 * The on-disk name and shape of every base tensor for an architecture, computed without allocating anything: a
 * checkpoint is checked against it before the model is built (a config.json that claims a larger architecture than its
 * weights must fail at once, not after building gigabytes of random weights). Order and names as weightEntries.
 */
export function diskShapes(arch: Architecture): Map<string, number[]> {
  const d = arch.dModel;
  const shapes = new Map<string, number[]>([
    ['model.embed_tokens.weight', [arch.vocabSize, d]],
    ['model.vision.patch_proj.weight', [d, patchDim(arch)]], // [out, in] on disk
    ['model.vision.patch_proj.bias', [d]],
    ['model.vision.patch_position_embedding', [patchesPerImage(arch), d]],
  ]);
  const projectionShape: Record<Projection, number[]> = {
    q_proj: [d, d],
    k_proj: [d, d],
    v_proj: [d, d],
    o_proj: [d, d],
    up_proj: [arch.dMlp, d],
    down_proj: [d, arch.dMlp],
  };
  for (let i = 0; i < arch.nLayers; i++) {
    shapes.set(`model.layers.${i}.input_layernorm.weight`, [d]);
    for (const p of PROJECTIONS) shapes.set(`${projectionModule(i, p)}.weight`, projectionShape[p]);
    shapes.set(`model.layers.${i}.post_attention_layernorm.weight`, [d]);
  }
  shapes.set('model.norm.weight', [d]);
  shapes.set('lm_head.weight', [arch.vocabSize, d]);
  return shapes;
}

/** Every base tensor with its on-disk name. */
export function weightEntries(w: ModelWeights): WeightEntry[] {
  const entries: WeightEntry[] = [
    { name: 'model.embed_tokens.weight', variable: w.embed, transposeOnDisk: false },
    { name: 'model.vision.patch_proj.weight', variable: w.patchProj, transposeOnDisk: true },
    { name: 'model.vision.patch_proj.bias', variable: w.patchBias, transposeOnDisk: false },
    { name: 'model.vision.patch_position_embedding', variable: w.patchPos, transposeOnDisk: false },
  ];
  w.layers.forEach((layer, i) => {
    entries.push({
      name: `model.layers.${i}.input_layernorm.weight`,
      variable: layer.attnNorm,
      transposeOnDisk: false,
    });
    for (const p of PROJECTIONS)
      entries.push({ name: `${projectionModule(i, p)}.weight`, variable: layer.proj[p], transposeOnDisk: true });
    entries.push({
      name: `model.layers.${i}.post_attention_layernorm.weight`,
      variable: layer.mlpNorm,
      transposeOnDisk: false,
    });
  });
  entries.push({ name: 'model.norm.weight', variable: w.finalNorm, transposeOnDisk: false });
  entries.push({ name: 'lm_head.weight', variable: w.lmHead, transposeOnDisk: true });
  return entries;
}

export function countParameters(variables: tf.Variable[]): number {
  return variables.reduce((s, v) => s + v.size, 0);
}
