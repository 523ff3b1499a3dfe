// The built-in model written once (one definition per architecture, two executions), over
// a small set of operations that each engine executes: the tfjs forward (models/builtin/transformer.ts: training,
// prefill, scoring, cached decoding) and its batched decoding step (models/builtin/decode.ts), the ONNX Runtime
// inference graphs (models/onnx/builtin/builtin-graph.ts) and the ORT learner's differentiated graph
// (models/onnx/builtin/builtin-train-graph.ts).
//
//   x = embed(tokens); at image-patch rows x += (pixels − ½) W_patch + b_patch + pos[patch]
//   per layer (pre-norm):  q, k, v = RoPE(h Wq) / √dh, RoPE(h Wk), h Wv   with h = RMSNorm(x)
//                          x += attention(q, k, v) Wo
//                          x += GELU(RMSNorm(x) Wup) Wdown               (GELU: x σ(1.702 x))
//   logits = RMSNorm(x) W_head                                          (untied head)
// LoRA may adapt any of q, k, v, o, up, down (config.ts targetModules): `linear` and `qkv` add the adapter's delta.
//
// Where the line sits (as models/hf/decoder-ops.ts draws it for the Hugging Face decoders): this file owns what the
// model computes (the steps and their order, the norms' eps, the query scale, the GELU constant, which projections are
// adaptable); an executor owns how (row layout, RoPE tables, masks, where keys and values of earlier positions and of a
// shared prompt live, how LoRA A/B reach a projection: tfjs variables, merged weights or ONNX inputs). Two ops are
// shaped for the fusions the engines' speed rests on. `qkv` is one op (q, k, v of a layer, RoPE applied, q scaled), so
// the ONNX inference executor can compute it as one product with RoPE and the scale folded into a joined weight, and
// what travels from `qkv` to `attention` is the executor's own type (Qkv): three tensors in tfjs, the joined RoPE'd
// [q | k] and v in ONNX. `add` may return a sum the executor has not computed yet, so the ONNX executor fuses each
// residual add into the RMSNorm that follows it (com.microsoft SkipSimplifiedLayerNormalization).
//
// Not an extension of DecoderOps: the two share only the names of a few ops. This model's MLP is not gated, its
// embedding has learned image patches, RoPE, the scale and the q/k/v projections are one fused op here (the built-in
// ONNX executor folds RoPE into the weights; the Hugging Face block keeps them apart, as Gemma's q/k norms sit between
// the projection and RoPE), and its weights are plain tensors whose LoRA adapters the executor looks up by (layer, projection) rather than modules that
// carry their own. A common base would make both interfaces larger for no shared executor.
import type * as tf from '@tensorflow/tfjs';
import { headDim, type Architecture } from './config.ts';
import type { LayerWeights, ModelWeights, Projection } from './weights.ts';

/** A base weight as the executors read it (a tfjs variable, or a tensor with adapters merged in: decode.ts). */
export type Weight = tf.Tensor;

/** GELU's sigmoid approximation: x σ(k x). */
const GELU_SIGMOID_K = 1.702;

/** The query scale 1/√dh, applied to q after RoPE. */
export const queryScale = (arch: Architecture): number => 1 / Math.sqrt(headDim(arch));

/**
 * What an engine provides. T: a value (a tensor, an ONNX value name); Qkv: how q, k and v travel from `qkv` to
 * `attention`. Shapes are per row: "[…, n]" is a row of n values whatever leading axes the executor uses.
 */
export interface BuiltinOps<T, Qkv> {
  /** Rows of the embedding table [V, d] at the pass's token ids → x […, d]. */
  embedTokens(table: Weight): T;
  /** The pass's distinct image patches [patches, patchDim], pixel values in [0, 1]; null when the pass has none. */
  patchPixels(): T | null;
  /** Each patch row's position embedding (its index in its image) from the table [patchesPerImage, d] → [patches, d]. */
  patchPositions(table: Weight): T;
  /** x with the patch embeddings [patches, d] added at the rows of every occurrence of their image. */
  placePatches(x: T, patches: T): T;
  /** x − c. */
  subScalar(x: T, c: number): T;
  /** x […, in] · W [in, out], never adapted (the patch projection, the output head). */
  project(x: T, w: Weight): T;
  /** x […, in] · W [in, out] (+ the LoRA delta when `projection` of `layer` is adapted in this pass). */
  linear(x: T, w: Weight, layer: number, projection: Projection): T;
  /** x + b with b [n] broadcast over rows. */
  addBias(x: T, b: Weight): T;
  /** a + b (equal shapes). */
  add(a: T, b: T): T;
  /** RMSNorm over the last axis: x · rsqrt(mean(x²) + eps) · gain. */
  rmsNorm(x: T, gain: Weight, eps: number): T;
  /** x · σ(k x). */
  sigmoidGelu(x: T, k: number): T;
  /**
   * A layer's queries, keys and values from its normalised input h […, d]: q = RoPE(linear(h, Wq)) · qScale,
   * k = RoPE(linear(h, Wk)), v = linear(h, Wv), each linear adapted as `linear` is. RoPE rotates each head's two halves
   * (rotate_half) by the angles of the row's position (rope.ts ropeValues).
   */
  qkv(h: T, w: LayerWeights, layer: number, qScale: number): Qkv;
  /**
   * Multi-head attention (nHeads heads of dh = d / nHeads) of this pass's queries over the keys and values each row
   * sees (its own causally, a shared prompt's, earlier positions': the executor's cache and masks) → the heads'
   * outputs concatenated […, d]. q is already scaled.
   */
  attention(qkv: Qkv, layer: number): T;
}

/** The input of the first block: token embeddings, plus each image patch's embedding at its rows, x […, d]. */
export function embed<T, Q>(ops: BuiltinOps<T, Q>, w: ModelWeights): T {
  const x = ops.embedTokens(w.embed);
  const pixels = ops.patchPixels();
  if (pixels === null) return x;
  // Every distinct patch once: [patches, patchDim] → [patches, d].
  const patches = ops.add(
    ops.addBias(ops.project(ops.subScalar(pixels, 0.5), w.patchProj), w.patchBias),
    ops.patchPositions(w.patchPos),
  );
  return ops.placePatches(x, patches);
}

/** One pre-norm block: x […, d] → x […, d]. */
export function block<T, Q>(ops: BuiltinOps<T, Q>, arch: Architecture, w: LayerWeights, layer: number, x: T): T {
  const qkv = ops.qkv(ops.rmsNorm(x, w.attnNorm, arch.normEps), w, layer, queryScale(arch));
  x = ops.add(x, ops.linear(ops.attention(qkv, layer), w.proj.o_proj, layer, 'o_proj'));
  const up = ops.linear(ops.rmsNorm(x, w.mlpNorm, arch.normEps), w.proj.up_proj, layer, 'up_proj');
  return ops.add(x, ops.linear(ops.sigmoidGelu(up, GELU_SIGMOID_K), w.proj.down_proj, layer, 'down_proj'));
}

/** Next-token logits […, V] of the last block's output x […, d]: the final norm and the untied head. */
export function head<T, Q>(ops: BuiltinOps<T, Q>, arch: Architecture, w: ModelWeights, x: T): T {
  return ops.project(ops.rmsNorm(x, w.finalNorm, arch.normEps), w.lmHead);
}
