// LoRA adapters (Hu et al.) on the built-in model's projections: y = x W + (alpha / r) · (x A) B, with A [in, r]
// random and B [r, out] zero at the start, so a fresh adapter leaves the model unchanged. The base W stays frozen; the
// reference policy is the same forward pass with the adapters skipped, so no second copy of the model is kept.
// On disk adapters use the PEFT layout (see peft-adapter.ts): lora_A.weight is A transposed ([r, in]) and
// lora_B.weight is B transposed ([out, r]), as torch.nn.Linear stores them.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../core/rng.ts';
import type { LoraConfig } from './config.ts';
import { mm } from '../ops.ts';
import { projectionModule, type ModelWeights, type Projection } from './weights.ts';

export interface LoraAdapter {
  /** Module path, e.g. model.layers.0.self_attn.q_proj. */
  module: string;
  a: tf.Variable; // [in, r]
  b: tf.Variable; // [r, out]
}

export interface LoraSet {
  config: LoraConfig;
  /** alpha / r. */
  scale: number;
  /** Adapters by layer, then by projection (absent when the projection is not a target). */
  layers: Partial<Record<Projection, LoraAdapter>>[];
}

/**
 * A model that carries adapters (BuiltinPolicy): what peft-adapter.ts needs to save and load them, so that the PEFT
 * files and the policy that calls them do not import each other.
 */
export interface LoraHost {
  readonly lora: LoraSet | null;
  /** Add fresh adapters (replacing any present). */
  attachLora(config: LoraConfig, rng: Rng): LoraSet;
  /** Remove the adapters (without merging). */
  detachLora(): void;
}

/** Adapters for every target projection: A ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's default bound), B = 0. */
export function createLora(weights: ModelWeights, config: LoraConfig, rng: Rng): LoraSet {
  const layers = weights.layers.map((layer, i) => {
    const adapters: Partial<Record<Projection, LoraAdapter>> = {};
    for (const p of config.targetModules) {
      const [inDim, outDim] = layer.proj[p].shape;
      const bound = 1 / Math.sqrt(inDim);
      const a = new Float32Array(inDim * config.r);
      for (let j = 0; j < a.length; j++) a[j] = (rng.next() * 2 - 1) * bound;
      adapters[p] = {
        module: projectionModule(i, p),
        a: tf.variable(tf.tensor2d(a, [inDim, config.r]), true),
        b: tf.variable(tf.zeros([config.r, outDim]), true),
      };
    }
    return adapters;
  });
  return { config, scale: config.alpha / config.r, layers };
}

export function loraVariables(lora: LoraSet): tf.Variable[] {
  return lora.layers.flatMap((l) => Object.values(l).flatMap((a) => [a!.a, a!.b]));
}

export function loraAdapters(lora: LoraSet): LoraAdapter[] {
  return lora.layers.flatMap((l) => Object.values(l) as LoraAdapter[]);
}

/** x W (+ scale · x A B when an adapter is given). x: [n, in]. */
export function linear(x: tf.Tensor2D, w: tf.Tensor, adapter: LoraAdapter | undefined, scale: number): tf.Tensor2D {
  const base = mm(x, w as tf.Tensor2D);
  if (!adapter) return base;
  const low = tf.mul(mm(x, adapter.a as tf.Tensor2D), scale) as tf.Tensor2D;
  return tf.add(base, mm(low, adapter.b as tf.Tensor2D));
}

/** Fold the adapters into the base weights (W += scale · A B) and reset B to zero, so the model computes the same
 *  function with or without the (now empty) adapters. */
export function mergeLora(weights: ModelWeights, lora: LoraSet): void {
  lora.layers.forEach((adapters, i) => {
    for (const [p, adapter] of Object.entries(adapters) as [Projection, LoraAdapter][]) {
      const w = weights.layers[i].proj[p];
      w.assign(
        tf.tidy(() => tf.add(w, tf.mul(tf.matMul(adapter.a as tf.Tensor2D, adapter.b as tf.Tensor2D), lora.scale))),
      );
      adapter.b.assign(tf.zerosLike(adapter.b));
    }
  });
}

export function disposeLora(lora: LoraSet): void {
  for (const v of loraVariables(lora)) v.dispose();
}

/**
 * Projection weights with the adapters folded in (W + scale · A B), as new tensors: the model's function is unchanged
 * but each linear layer is one product instead of three, which is what decoding, a long chain of tiny steps, wants.
 * The caller disposes the returned tensors.
 */
export function mergedProjections(weights: ModelWeights, lora: LoraSet): Record<Projection, tf.Tensor>[] {
  return weights.layers.map((layer, i) => {
    const out = { ...layer.proj } as Record<Projection, tf.Tensor>;
    for (const [p, adapter] of Object.entries(lora.layers[i]) as [Projection, LoraAdapter][]) {
      out[p] = tf.tidy(() =>
        tf.add(layer.proj[p], tf.mul(tf.matMul(adapter.a as tf.Tensor2D, adapter.b as tf.Tensor2D), lora.scale)),
      );
    }
    return out;
  });
}
