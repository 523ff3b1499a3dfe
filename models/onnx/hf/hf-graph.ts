// The Hugging Face text decoder (Llama, Qwen2, Gemma 3 text, the language models of Idefics3 and
// Gemma3ForConditionalGeneration) as an ONNX graph, generated from the same block
// definition the tfjs forward executes (models/hf/decoder-ops.ts): this file is that definition's ONNX executor, which
// emits each op as nodes through GraphBuilder, and the graph's inputs and outputs around it.
//
// Inputs (B rows, S new positions, P cached ones, K = P + S keys):
//   inputs_embeds [B, S, H]        token embeddings, looked up in tfjs (HfDecoder.embed: Gemma's sqrt(H) scaling) or
//                                  with image features merged (the vision tower stays on tfjs). The graph starts here,
//                                  not at input_ids, so text and image prompts enter the same way and the embedding
//                                  table is not held twice (a tied model's table is already here as the head).
//   rope_cos, rope_sin [B, S, 1, d]  the global layers' RoPE table (layers/rope.ts ropeValues), and rope_cos_local,
//                                  rope_sin_local for Gemma 3's sliding layers (their own base)
//   mask [B, 1, S, K]              additive (0 / -1e9; layers/attention.ts maskValues), and mask_sliding for sliding layers
//   past_key.<i>, past_value.<i> [B, nkv, P, d]  (P may be 0)
//   rope_cos, rope_sin of a multimodal-RoPE decoder (Qwen-VL) are layers/mrope.ts mropeValues of the [3, B·S] positions
//   deepstack.<j> [B, S, H]        Qwen3-VL: added to the residual stream after layer j (zeros but at image tokens)
//   logit_rows [R] int64           the positions along S whose logits are wanted (prefill: the last; scoring: several)
//   lora.<module>.a [in, r], lora.<module>.b [r, out]  every adapted linear's A (pre-multiplied by alpha / r) and B:
//                                  an update feeds new values and never rebuilds the session; B = 0 gives the base
// Outputs: logits [B, R, V] and, per layer, the caches. Two variants:
//   caches kept on the device (WebGPU): present_key.<i>, present_value.<i> [B, nkv, K, d], past ++ new (RoPE applied
//     to keys), fed back as the next run's past;
//   caches on the host (option hostCaches; host-cache.ts): past_key.<i>, past_value.<i> are [B, nkv, C, d], a
//     prompt cache or a decoding loop's buffers of a fixed capacity C filled up to some position and blocked beyond it
//     by the mask (then [B, 1, S, C + S]); attention reads them in place, the past's scores and the new positions'
//     side by side, and the graph outputs only new_key.<i>, new_value.<i> [B, nkv, S, d], which the caller writes into
//     its buffers. No cache is concatenated, transposed or copied out of ORT per step.
// Base weights are initializers: in the decoder's shared weight file when given (weight-file.ts: the learner's graph
// maps the same file), else inline, or in an external data file when the model is too large for one protobuf
// (graph-builder.ts toModel).
import type { DecoderConfig } from '../../hf/config.ts';
import {
  decoderBlock,
  decoderFinalNorm,
  decoderLogits,
  type AttentionSpec,
  type DecoderOps,
  type WeightTensor,
} from '../../hf/decoder-ops.ts';
import type { DecoderWeights } from '../../hf/decoder-weights.ts';
import type { LinearWeights } from '../../layers/linear.ts';
import type { MlpActivation } from '../../layers/mlp.ts';
import type { NormStyle } from '../../layers/rms-norm.ts';
import { GraphBuilder, MAX_INLINE_BYTES, MS_DOMAIN, type SerializedModel } from '../graph-builder.ts';
import type { SharedWeightFile } from '../weight-file.ts';
import type { WeightDtype } from '../weight-encoding.ts';

/** Adapted linears of a graph: module path → LoRA rank (their A/B are graph inputs). */
export type HfLoraSpec = ReadonlyMap<string, number>;

export const loraInput = (module: string, part: 'a' | 'b'): string => `lora.${module}.${part}`;

const values = (v: WeightTensor): Float32Array => v.dataSync() as Float32Array;

/** The ONNX executor of the shared decoder block: values are graph value names, rows [B, S, …]. */
class OnnxDecoderOps implements DecoderOps<string> {
  private norms = 0;
  constructor(
    private readonly b: GraphBuilder,
    private readonly lora: HfLoraSpec,
    private readonly inputs: {
      cos: string;
      sin: string;
      cosLocal: string | null;
      sinLocal: string | null;
      mask: string;
      maskSliding: string | null;
    },
    private readonly stored: WeightDtype,
    private readonly hostCaches = false,
  ) {}

  linear(x: string, l: LinearWeights): string {
    const b = this.b;
    const [inDim, outDim] = l.w.shape;
    let y = b.op1('MatMul', [x, b.weight(`${l.module}.weight`, () => values(l.w), [inDim, outDim], this.stored)]);
    if (l.bias) y = b.op1('Add', [y, b.floats(`${l.module}.bias`, () => values(l.bias!), [outDim])]);
    const r = this.lora.get(l.module);
    if (r !== undefined) {
      const a = b.input(loraInput(l.module, 'a'), 'float32', [inDim, r]);
      const bb = b.input(loraInput(l.module, 'b'), 'float32', [r, outDim]);
      y = b.op1('Add', [y, b.op1('MatMul', [b.op1('MatMul', [x, a]), bb])]);
    }
    return y;
  }

  rmsNorm(x: string, weight: WeightTensor, eps: number, style: NormStyle): string {
    const w = values(weight);
    // Gemma's (1 + w) in float32, as tfjs's add computes it.
    const gain = style === 'one_plus_w' ? Float32Array.from(w, (v) => Math.fround(v + 1)) : w;
    return this.b.op1('SimplifiedLayerNormalization', [x, this.b.floats(`norm.${this.norms++}`, gain, [w.length])], {
      axis: -1,
      epsilon: { float: eps },
    });
  }

  heads(x: string, n: number, d: number): string {
    return this.b.op1('Reshape', [x, this.b.ints([0, 0, n, d])]); // [B, S, n·d] → [B, S, n, d]
  }

  rope(x: string, table: 'global' | 'local'): string {
    const b = this.b;
    const local = table === 'local' && this.inputs.cosLocal !== null;
    const cos = local ? this.inputs.cosLocal! : this.inputs.cos;
    const sin = local ? this.inputs.sinLocal! : this.inputs.sin;
    const [x1, x2] = b.op('Split', [x], { axis: -1, num_outputs: 2 }, 2); // halves [B, S, n, d/2]
    const rotated = b.op1('Concat', [b.op1('Neg', [x2]), x1], { axis: -1 });
    return b.op1('Add', [b.op1('Mul', [x, cos]), b.op1('Mul', [rotated, sin])]);
  }

  attention(q: string, k: string, v: string, spec: AttentionSpec): string {
    const b = this.b;
    const { layer: i, heads: nh, kvHeads: nkv, headDim: d } = spec;
    const rep = nh / nkv;
    const pastLength = this.hostCaches ? 'capacity' : 'past';
    const pastK = b.input(`past_key.${i}`, 'float32', ['batch', nkv, pastLength, d]);
    const pastV = b.input(`past_value.${i}`, 'float32', ['batch', nkv, pastLength, d]);
    const toCache = (t: string) => b.op1('Transpose', [t], { perm: [0, 2, 1, 3] }); // [B, S, nkv, d] → [B, nkv, S, d]
    const newK = toCache(k);
    const newV = toCache(v);
    // GQA: query head h = kv·rep + j reads KV head kv (repeat_interleave). q [B, nh, S, d] is [B, nkv, rep, S, d] in
    // memory; keys and values get a broadcast axis, so they are never copied per query head.
    const q5 = b.op1('Reshape', [b.op1('Transpose', [q], { perm: [0, 2, 1, 3] }), b.ints([0, nkv, rep, -1, d])]);
    const mask = b.op1('Unsqueeze', [
      spec.sliding && this.inputs.maskSliding ? this.inputs.maskSliding : this.inputs.mask,
      b.ints([1]),
    ]); // [B, 1, 1, S, K]
    if (this.hostCaches) {
      b.output(b.op1('Identity', [newK], {}, `new_key.${i}`), 'float32', ['batch', nkv, 'seq', d]);
      b.output(b.op1('Identity', [newV], {}, `new_value.${i}`), 'float32', ['batch', nkv, 'seq', d]);
      // q·kᵀ against the buffer ([B, nkv, rep, S, C]) and against the new keys ([…, S, S]), read in place (transB).
      const against = (keys: string) =>
        b.op1(
          'FusedMatMul',
          [q5, b.op1('Unsqueeze', [keys, b.ints([2])])],
          { transB: 1, alpha: { float: spec.scale } },
          undefined,
          MS_DOMAIN,
        );
      let scores = b.op1('Concat', [against(pastK), against(newK)], { axis: -1 }); // [B, nkv, rep, S, C + S]
      if (spec.softcap !== null) scores = this.softcap(scores, spec.softcap);
      const probs = b.op1('Softmax', [b.op1('Add', [scores, mask])], { axis: -1 });
      const capacity = b.op1('Shape', [pastK], { start: 2, end: 3 }); // [1]: C
      const big = b.ints([2 ** 62]);
      const last = b.ints([-1]);
      const probsPast = b.op1('Slice', [probs, b.ints([0]), capacity, last]);
      const probsNew = b.op1('Slice', [probs, capacity, big, last]);
      const o = b.op1('Add', [
        b.op1('MatMul', [probsPast, b.op1('Unsqueeze', [pastV, b.ints([2])])]),
        b.op1('MatMul', [probsNew, b.op1('Unsqueeze', [newV, b.ints([2])])]),
      ]); // [B, nkv, rep, S, d]
      const perHead = b.op1('Transpose', [b.op1('Reshape', [o, b.ints([0, nh, -1, d])])], { perm: [0, 2, 1, 3] });
      return b.op1('Reshape', [perHead, b.ints([0, 0, nh * d])]); // [B, S, nh·d]
    }
    const keys = b.op1('Concat', [pastK, newK], { axis: 2 }, `present_key.${i}`); // [B, nkv, K, d]
    const vals = b.op1('Concat', [pastV, newV], { axis: 2 }, `present_value.${i}`);
    b.output(keys, 'float32', ['batch', nkv, 'keys', d]);
    b.output(vals, 'float32', ['batch', nkv, 'keys', d]);
    const kT = b.op1('Unsqueeze', [b.op1('Transpose', [keys], { perm: [0, 1, 3, 2] }), b.ints([2])]); // [B, nkv, 1, d, K]
    let scores = b.op1('Mul', [b.op1('MatMul', [q5, kT]), b.scalar(spec.scale)]); // [B, nkv, rep, S, K]
    if (spec.softcap !== null) scores = this.softcap(scores, spec.softcap);
    const probs = b.op1('Softmax', [b.op1('Add', [scores, mask])], { axis: -1 });
    const o = b.op1('MatMul', [probs, b.op1('Unsqueeze', [vals, b.ints([2])])]); // [B, nkv, rep, S, d]
    const perHead = b.op1('Transpose', [b.op1('Reshape', [o, b.ints([0, nh, -1, d])])], { perm: [0, 2, 1, 3] }); // [B, S, nh, d]
    return b.op1('Reshape', [perHead, b.ints([0, 0, nh * d])]);
  }

  activation(x: string, act: MlpActivation): string {
    const b = this.b;
    if (act === 'silu') return b.op1('Mul', [x, b.op1('Sigmoid', [x])]);
    // GELU, tanh approximation, as layers/mlp.ts geluTanh writes it.
    const cube = b.op1('Mul', [b.op1('Mul', [x, x]), x]);
    const inner = b.op1('Mul', [
      b.op1('Add', [x, b.op1('Mul', [cube, b.scalar(0.044715)])]),
      b.scalar(Math.sqrt(2 / Math.PI)),
    ]);
    return b.op1('Mul', [b.op1('Mul', [x, b.scalar(0.5)]), b.op1('Add', [b.op1('Tanh', [inner]), b.scalar(1)])]);
  }

  mul(a: string, c: string): string {
    return this.b.op1('Mul', [a, c]);
  }

  add(a: string, c: string): string {
    return this.b.op1('Add', [a, c]);
  }

  project(x: string, w: WeightTensor): string {
    const [inDim, outDim] = w.shape;
    return this.b.op1('MatMul', [x, this.b.weight('lm_head', () => values(w), [inDim, outDim], this.stored)]);
  }

  softcap(x: string, cap: number): string {
    const b = this.b;
    return b.op1('Mul', [b.op1('Tanh', [b.op1('Div', [x, b.scalar(cap)])]), b.scalar(cap)]);
  }
}

/** Where a graph's base weights go and in what type. */
export interface GraphWeightOptions {
  /** Past this many bytes of weights, an external data file of the graph's own (graph-builder.ts toModel). */
  maxInlineBytes?: number;
  /** The decoder's shared weight file (weight-file.ts); then maxInlineBytes does not apply. */
  shared?: SharedWeightFile;
  /** The projections' and head's stored type (weight-dtype.ts; default float32). */
  stored?: WeightDtype;
  /** Training graph, tests: logits one chunk of the output head holds (hf-train-head.ts CHUNK_LOGITS). */
  headChunkLogits?: number;
  /** Decoder graph for caches on the host: read in place, only the new keys and values out (see the header). */
  hostCaches?: boolean;
}

/**
 * The serialised model of a decoder (weights read from its tfjs variables), with LoRA inputs for `lora`'s modules; past
 * `maxInlineBytes` of weights (a checkpoint above about 400 M parameters) they go to an external data file.
 */
export function buildHfDecoderGraph(
  c: DecoderConfig,
  weights: DecoderWeights,
  lora: HfLoraSpec,
  options: GraphWeightOptions = {},
): SerializedModel {
  const b = new GraphBuilder(`metrl-hf-${c.family}`);
  const d = c.headDim;
  const embeds = b.input('inputs_embeds', 'float32', ['batch', 'seq', c.hiddenSize]);
  const local = c.ropeLocalTheta !== null;
  const sliding = c.layerTypes.includes('sliding_attention');
  const inputs = {
    cos: b.input('rope_cos', 'float32', ['batch', 'seq', 1, d]),
    sin: b.input('rope_sin', 'float32', ['batch', 'seq', 1, d]),
    cosLocal: local ? b.input('rope_cos_local', 'float32', ['batch', 'seq', 1, d]) : null,
    sinLocal: local ? b.input('rope_sin_local', 'float32', ['batch', 'seq', 1, d]) : null,
    mask: b.input('mask', 'float32', ['batch', 1, 'seq', 'keys']),
    maskSliding: sliding ? b.input('mask_sliding', 'float32', ['batch', 1, 'seq', 'keys']) : null,
  };
  const rows = b.input('logit_rows', 'int64', ['rows']);
  const ops = new OnnxDecoderOps(b, lora, inputs, options.stored ?? 'float32', options.hostCaches);
  const deepstack = Array.from({ length: c.deepstackLayers }, (_, j) =>
    b.input(`deepstack.${j}`, 'float32', ['batch', 'seq', c.hiddenSize]),
  );
  let x = embeds;
  weights.layers.forEach((w, i) => {
    x = decoderBlock(ops, c, w, i, x);
    if (i < deepstack.length) x = b.op1('Add', [x, deepstack[i]]);
  });
  const hidden = b.op1('Gather', [decoderFinalNorm(ops, c, weights, x), rows], { axis: 1 }); // [B, R, H]
  b.op1('Identity', [decoderLogits(ops, c, weights, hidden)], {}, 'logits');
  b.output('logits', 'float32', ['batch', 'rows', c.vocabSize]);
  return b.toModel(18, options.maxInlineBytes ?? MAX_INLINE_BYTES, options.shared);
}
