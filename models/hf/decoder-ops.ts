// The Hugging Face decoder block written once, over a small set of operations that two engines execute (one
// definition per architecture, two executions): the tfjs executor in models/hf/decoder.ts (the
// learner's differentiable forward and the tfjs sampler) and the ONNX executor in models/onnx/hf/hf-graph.ts (which emits
// the same steps as ONNX nodes for ONNX Runtime).
//
// Where the line sits. The definition owns everything that tells Llama, Qwen2 and Gemma 3 apart: which norms run where
// (pre-norm vs Gemma's sandwich), q/k norms, which RoPE table a layer uses (Gemma's sliding layers have their own
// base), the attention's scale and soft-cap, biases (carried by the weights), the gated MLP and its activation, the
// final norm, the head and its soft-cap. An executor owns how a step is computed: tensor layout ([B·T, …] rows in
// tfjs, [B, S, …] in ONNX), whether LoRA is applied and how A/B reach it (tfjs variables, ONNX graph inputs), the RoPE
// tables and masks of a pass (inputs it computes or is fed), and above all attention's cache: where keys and values
// of earlier positions live (tfjs tensors, ONNX past/present inputs and outputs), how GQA heads are grouped and how the
// additive mask is applied. Those are execution choices, not architecture, so `attention` is one op whose cache is the
// executor's business; it receives q, k, v after RoPE and returns the heads' outputs, concatenated.
import type { DecoderConfig } from './config.ts';
import type { DecoderLayerWeights, DecoderWeights } from './decoder-weights.ts';
import type { LinearWeights } from '../layers/linear.ts';
import type { MlpActivation, MlpWeights } from '../layers/mlp.ts';
import type { NormStyle } from '../layers/rms-norm.ts';

/** A weight vector or matrix as the executors read it (a tfjs variable: the ONNX executor reads its values once). */
export type WeightTensor = DecoderLayerWeights['inputNorm'];

export interface AttentionSpec {
  layer: number;
  sliding: boolean;
  heads: number;
  kvHeads: number;
  headDim: number;
  scale: number;
  softcap: number | null;
}

/**
 * What an engine provides. Shapes are per row: "[…, n]" means a row of n values, whatever leading axes the executor
 * uses (tfjs [B·T, n], ONNX [B, S, n]); heads(x) makes each row [heads, d].
 */
export interface DecoderOps<T> {
  /** x […, in] → […, out]: x W (+ bias) (+ the executor's LoRA delta for `l`). */
  linear(x: T, l: LinearWeights): T;
  /** RMSNorm over the last axis: x · rsqrt(mean(x²) + eps) · w, or · (1 + w) (Gemma). */
  rmsNorm(x: T, weight: WeightTensor, eps: number, style: NormStyle): T;
  /** […, n·d] → […, n, d]. */
  heads(x: T, n: number, d: number): T;
  /** Rotate-half RoPE of […, n, d] heads with the pass's global or local (Gemma sliding layers) table. */
  rope(x: T, table: 'global' | 'local'): T;
  /** Attention over q […, nh, d], k and v […, nkv, d] (RoPE applied) and the executor's cache → […, nh·d]. */
  attention(q: T, k: T, v: T, spec: AttentionSpec): T;
  activation(x: T, act: MlpActivation): T;
  mul(a: T, b: T): T;
  add(a: T, b: T): T;
  /** x […, H] · W [H, V] (the output head; no LoRA). */
  project(x: T, w: WeightTensor): T;
  /** tanh soft-capping: cap · tanh(x / cap). */
  softcap(x: T, cap: number): T;
}

/** down(act(gate(x)) · up(x)). */
function gatedMlp<T>(ops: DecoderOps<T>, w: MlpWeights, act: MlpActivation, x: T): T {
  return ops.linear(ops.mul(ops.activation(ops.linear(x, w.gate), act), ops.linear(x, w.up)), w.down);
}

/** One decoder block: x […, H] → x […, H]. */
export function decoderBlock<T>(ops: DecoderOps<T>, c: DecoderConfig, w: DecoderLayerWeights, layer: number, x: T): T {
  const sliding = c.layerTypes[layer] === 'sliding_attention';
  const norm = (t: T, weight: WeightTensor | undefined) => ops.rmsNorm(t, weight!, c.rmsNormEps, c.normStyle);
  const normed = norm(x, w.inputNorm);
  let q = ops.heads(ops.linear(normed, w.q), c.numHeads, c.headDim);
  let k = ops.heads(ops.linear(normed, w.k), c.numKvHeads, c.headDim);
  const v = ops.heads(ops.linear(normed, w.v), c.numKvHeads, c.headDim);
  if (w.qNorm && w.kNorm) {
    // Gemma 3: RMSNorm of each head over head_dim, before RoPE.
    q = norm(q, w.qNorm);
    k = norm(k, w.kNorm);
  }
  const table = sliding && c.ropeLocalTheta !== null ? 'local' : 'global';
  q = ops.rope(q, table);
  k = ops.rope(k, table);
  const out = ops.attention(q, k, v, {
    layer,
    sliding,
    heads: c.numHeads,
    kvHeads: c.numKvHeads,
    headDim: c.headDim,
    scale: c.attnScale,
    softcap: c.attnLogitSoftcap,
  });
  const a = ops.linear(out, w.o);
  if (c.sandwichNorm) {
    // Gemma: the attention and MLP outputs are normalised before their residual adds.
    x = ops.add(x, norm(a, w.postAttnNorm));
    return ops.add(x, norm(gatedMlp(ops, w.mlp, c.act, norm(x, w.preFfnNorm)), w.postFfnNorm));
  }
  x = ops.add(x, a);
  return ops.add(x, gatedMlp(ops, w.mlp, c.act, norm(x, w.postAttnNorm)));
}

/** The final norm: x […, H] → the output head's input […, H]. */
export function decoderFinalNorm<T>(ops: DecoderOps<T>, c: DecoderConfig, weights: DecoderWeights, x: T): T {
  return ops.rmsNorm(x, weights.finalNorm, c.rmsNormEps, c.normStyle);
}

/** Logits […, V] of final-normalised rows: the (possibly tied) head and the optional final soft-capping. */
export function decoderLogits<T>(ops: DecoderOps<T>, c: DecoderConfig, weights: DecoderWeights, hidden: T): T {
  const logits = ops.project(hidden, weights.lmHead);
  return c.finalLogitSoftcap === null ? logits : ops.softcap(logits, c.finalLogitSoftcap);
}
