// A Hugging Face decoder's LoRA gradients as one ONNX graph (models/ layer, ONNX Runtime engine): the forward pass of
// one prompt group (a prompt and G of its completions) is the decoder's one definition (models/hf/decoder-ops.ts)
// executed over the differentiating builder (autodiff.ts, HfTrainOps below), which appends the backward pass. The tfjs
// forward (models/hf/decoder.ts, score.ts) executes the same definition and stays the reference; the gradients are
// tested against tfjs autodiff and finite differences on every fixture (tests/models/hf-ort-learner.test.ts).
//
// What it computes. R predicted tokens: token j of completion m is predicted by the prompt's last row (j = 0) or by
// the completion's own row j − 1 (`predict_rows` [R]), its id is `targets` [R]. With z = head(final hidden) / T:
//   token_logp [R]     log_softmax(z)[target]
//   token_entropy [R]  the entropy of softmax(z) (no gradient flows through it: the trainer's losses use it as a mask)
// and, fed with_gradients true, the gradient of Σ_r g_r · token_logp_r (`target_grads` g [R]) with respect to every LoRA A
// and B (`grad.lora.<module>.a|b`): the learner puts g = dLoss/dlogp there, so by the chain rule these are dLoss/dA
// and dLoss/dB whatever the loss (it depends on the adapters only through the log-probs).
//
// Rows: N = P + G·C packed rows: the prompt's P embeddings (images merged), then completion 0's C input tokens,
// completion 1's … (C = longest completion − 1, at least 1). Norms, projections and the MLP are one 2-D product over
// all N rows; attention splits them:
//   prompt      [nkv, rep·P, P]            causal (and Gemma 3's bidirectional image blocks, sliding windows)
//   completions [G, nkv, rep·C, P + C]     each sees the prompt's keys and, causally, its own (one mask for all G:
//                                          completion row i sits at position P + i in every completion)
// (GQA: a KV head's rep query heads are folded into its query axis.) The prompt's keys and values are computed once and
// receive the gradient of every completion. Only the R predicting rows go through the output head ([R, V] logits,
// not [N, V]).
import type { DecoderConfig } from '../hf/config.ts';
import { decoderBlock, decoderFinalNorm, decoderLogits, type AttentionSpec, type DecoderOps, type WeightTensor } from '../hf/decoder-ops.ts';
import type { DecoderWeights } from '../hf/decoder-weights.ts';
import type { LinearWeights } from '../layers/linear.ts';
import type { MlpActivation } from '../layers/mlp.ts';
import type { NormStyle } from '../layers/rms-norm.ts';
import { UserError } from '../../core/errors.ts';
import { DiffGraph, type Value } from './autodiff.ts';
import { chunkedHead } from './hf-train-head.ts';
import { MAX_INLINE_BYTES, type GraphBuilder, type SerializedModel } from './graph-builder.ts';
import type { GraphWeightOptions } from './hf-graph.ts';
import type { WeightDtype } from './weight-dtype.ts';

/** Adapted linears: module path → { rank, scale } (their A and B are the graph's params). */
export type HfTrainLoraSpec = ReadonlyMap<string, { r: number; scale: number }>;

/** Name of a LoRA param input (raw A [in, r] and B [r, out], as the tfjs variables hold them). */
export const hfTrainLoraName = (module: string, part: 'a' | 'b'): string => `lora.${module}.${part}`;
/** Name of the gradient output of a LoRA param. */
export const hfGradName = (param: string): string => `grad.${param}`;

const values = (v: WeightTensor): Float32Array => v.dataSync() as Float32Array;

/** The graph inputs the ops read (declared before the definition runs, so the input order is fixed). */
interface TrainInputs {
  cos: string;
  sin: string;
  cosLocal: string | null;
  sinLocal: string | null;
  promptMask: string;
  promptMaskSliding: string | null;
  completionMask: string;
  completionMaskSliding: string | null;
  rowSplits: string;
  scoreSplits: string;
  /** [G, C, nkv, rep, d]: completion queries as blocks. */
  shapeQc: string;
  /** [G, C, nkv, d]: completion keys and values as blocks. */
  shapeKc: string;
  /** [G, nkv, P, d]: the prompt's keys and values broadcast over the G completions. */
  expandPrompt: string;
}

/**
 * The differentiating executor of the shared decoder block: values are DiffGraph values over the N packed rows
 * ([N, …]); LoRA A and B are params, base weights and embeddings constants.
 */
class HfTrainOps implements DecoderOps<Value> {
  readonly params: Value[] = [];
  readonly paramDims = new Map<string, number[]>();
  private norms = 0;
  private readonly b: GraphBuilder;
  private readonly weightNames = new Map<WeightTensor, string>();
  private halves: { halves: string; swap: string } | null = null;
  private readonly signedSin = new Map<string, string>();

  constructor(
    private readonly g: DiffGraph,
    private readonly c: DecoderConfig,
    private readonly lora: HfTrainLoraSpec,
    private readonly inputs: TrainInputs,
    /** The stored type of the products' weights (weight-dtype.ts); norms and biases stay float32. */
    private readonly stored: WeightDtype,
  ) {
    this.b = g.b;
  }

  /**
   * A base weight as an initializer (named as models/onnx/hf-graph.ts names it, and in its type), added once however
   * often read: a float32 value (a Cast of it when stored 16-bit).
   */
  private weight(w: WeightTensor, name: string, data?: Float32Array, stored: WeightDtype = 'float32'): Value {
    let known = this.weightNames.get(w);
    if (known === undefined) this.weightNames.set(w, (known = this.b.weight(name, data ?? (() => values(w)), w.shape as number[], stored)));
    return this.g.constant(known, w.shape.length);
  }

  linear(x: Value, l: LinearWeights): Value {
    const { g } = this;
    let y = g.matmul(x, this.weight(l.w, `${l.module}.weight`, undefined, this.stored));
    if (l.bias) y = g.add(y, this.weight(l.bias, `${l.module}.bias`));
    const adapter = this.lora.get(l.module);
    if (adapter === undefined) return y;
    const [inDim, outDim] = l.w.shape as [number, number];
    const a = this.param(hfTrainLoraName(l.module, 'a'), [inDim, adapter.r]);
    const bb = this.param(hfTrainLoraName(l.module, 'b'), [adapter.r, outDim]);
    // ((x A) B) · scale, layers/linear.ts's order.
    return g.add(y, g.mulConst(g.matmul(g.matmul(x, a), bb), this.b.scalar(adapter.scale)));
  }

  private param(name: string, dims: number[]): Value {
    const v = this.g.param(name, dims);
    this.params.push(v);
    this.paramDims.set(name, dims);
    return v;
  }

  rmsNorm(x: Value, weight: WeightTensor, eps: number, style: NormStyle): Value {
    let name = this.weightNames.get(weight);
    if (name === undefined) {
      const w = values(weight);
      // Gemma's (1 + w) in float32, as tfjs's add computes it.
      const gain = style === 'one_plus_w' ? Float32Array.from(w, (v) => Math.fround(v + 1)) : w;
      this.weightNames.set(weight, (name = this.b.floats(`norm.${this.norms++}`, gain, [w.length])));
    }
    return this.g.rmsNorm(x, name, eps);
  }

  heads(x: Value, n: number, d: number): Value {
    return this.g.reshape(x, this.b.ints([-1, n, d]), 3); // [N, n·d] → [N, n, d]
  }

  /** Rotate-half RoPE (autodiff.ts rope) of [N, n, d] heads with the global or local table [N, 1, d]. */
  rope(x: Value, table: 'global' | 'local'): Value {
    const local = table === 'local' && this.inputs.cosLocal !== null;
    const cos = local ? this.inputs.cosLocal! : this.inputs.cos;
    const sin = local ? this.inputs.sinLocal! : this.inputs.sin;
    const d = this.c.headDim;
    // rotate_half's signs (−1 on each head's first half) folded into sin once per table.
    let signed = this.signedSin.get(sin);
    if (signed === undefined) {
      const signs = Float32Array.from({ length: d }, (_, i) => (i < d / 2 ? -1 : 1));
      this.signedSin.set(sin, (signed = this.b.op1('Mul', [sin, this.b.floats(`rope_signs.${this.signedSin.size}`, signs, [d])])));
    }
    // Views [N·n, 2, d/2] (the halves swapped by a gather) and back to x's shape.
    this.halves ??= { halves: this.b.ints([-1, 2, d / 2]), swap: this.b.ints([1, 0]) };
    return this.g.rope(x, cos, signed, { ...this.halves, rows: this.b.op1('Shape', [x.name]) });
  }

  attention(q: Value, k: Value, v: Value, spec: AttentionSpec): Value {
    if (spec.softcap !== null) throw new UserError('engine ort: the ONNX Runtime learner has no attention soft-capping (attn_logit_softcapping); use --engine tfjs for this checkpoint');
    const { g, b } = this;
    const { heads: nh, kvHeads: nkv, headDim: d } = spec;
    const rep = nh / nkv;
    const inp = this.inputs;
    const promptMask = spec.sliding && inp.promptMaskSliding ? inp.promptMaskSliding : inp.promptMask;
    const completionMask = spec.sliding && inp.completionMaskSliding ? inp.completionMaskSliding : inp.completionMask;
    const scaled = g.mulConst(q, b.scalar(spec.scale));
    const [qp, qc] = g.split(scaled, 0, inp.rowSplits, 2); // [P, nh, d], [G·C, nh, d]
    const [kp, kc] = g.split(k, 0, inp.rowSplits, 2); // [P, nkv, d], [G·C, nkv, d]
    const [vp, vc] = g.split(v, 0, inp.rowSplits, 2);
    // GQA: the rep query heads of a KV head read the same keys, so they are folded into its query axis (rows r·P + i,
    // the mask tiled to match) and every product is per KV head: no copy of the keys per query head, and dK = dSᵀ q
    // sums over the folded heads by itself.
    // The prompt: queries [nkv, rep·P, d], keys and values [nkv, P, d].
    const qpH = g.reshape(g.transpose(g.reshape(qp, b.ints([-1, nkv, rep, d]), 4), [1, 2, 0, 3]), b.ints([0, -1, d]), 3);
    const kpH = g.transpose(kp, [1, 0, 2]);
    const vpH = g.transpose(vp, [1, 0, 2]);
    const promptOut = g.reshape(g.attention(qpH, kpH, vpH, promptMask), b.ints([0, rep, -1, d]), 4); // [nkv, rep, P, d]
    const promptRows = g.reshape(g.transpose(promptOut, [2, 0, 1, 3]), b.ints([-1, nh * d]), 2); // [P, nh·d]
    // The completions: queries [G, nkv, rep·C, d]; keys and values the prompt's [1, nkv, P, d] broadcast over G, then
    // their own [G, nkv, C, d], joined along the key axis.
    const qcH = g.reshape(g.transpose(g.reshape(qc, inp.shapeQc, 5), [0, 2, 3, 1, 4]), b.ints([0, 0, -1, d]), 4);
    const keysOf = (prompt: Value, own: Value) =>
      g.concat([g.expand(g.reshape(prompt, b.ints([1, nkv, -1, d]), 4), inp.expandPrompt, [0]), g.transpose(g.reshape(own, inp.shapeKc, 4), [0, 2, 1, 3])], 2, inp.scoreSplits); // [G, nkv, P + C, d]
    const completionOut = g.reshape(g.attention(qcH, keysOf(kpH, kc), keysOf(vpH, vc), completionMask), b.ints([0, 0, rep, -1, d]), 5); // [G, nkv, rep, C, d]
    const completionRows = g.reshape(g.transpose(completionOut, [0, 3, 1, 2, 4]), b.ints([-1, nh * d]), 2); // [G·C, nh·d]
    return g.concat([promptRows, completionRows], 0, inp.rowSplits); // [N, nh·d]
  }

  activation(x: Value, act: MlpActivation): Value {
    return act === 'silu' ? this.g.gelu(x, 1) : this.g.geluTanh(x); // x σ(x) is the sigmoid form at k = 1
  }

  mul(a: Value, c: Value): Value {
    return this.g.mul(a, c);
  }

  add(a: Value, c: Value): Value {
    return this.g.add(a, c);
  }

  project(x: Value, w: WeightTensor): Value {
    return this.g.matmul(x, this.headWeight(w));
  }

  /** The output head's weight [H, V] as a float32 value (chunked-head.ts reads it directly). */
  headWeight(w: WeightTensor): Value {
    return this.weight(w, 'lm_head', undefined, this.stored);
  }

  softcap(x: Value, cap: number): Value {
    return this.g.softcap(x, cap);
  }
}

/** Backward from `seeds` to every LoRA param: the gradients as a subgraph's outputs, in ops.params order. */
function gradientOutputs(g: DiffGraph, ops: HfTrainOps, seeds: Map<string, string>): { name: string; type: 'float32'; dims: number[] }[] {
  const grads = g.backward(seeds, ops.params);
  return ops.params.map((p) => {
    const grad = grads.get(p.name);
    if (!grad) throw new Error(`no gradient reaches ${p.name}`);
    return { name: g.b.op1('Identity', [grad]), type: 'float32' as const, dims: ops.paramDims.get(p.name)! };
  });
}

/**
 * The serialised training graph of a decoder (weights read from its tfjs variables) with LoRA params for `lora`'s
 * modules. Fed `with_gradients` false it is the forward alone (token_logp, token_entropy): the learner's scoring pass,
 * so the log-probs the loss sees come from the very forward the gradients differentiate.
 */
export function buildHfTrainGraph(c: DecoderConfig, weights: DecoderWeights, lora: HfTrainLoraSpec, options: GraphWeightOptions = {}): SerializedModel {
  if (lora.size === 0) throw new Error('the training graph needs LoRA adapters (it differentiates them)');
  const g = new DiffGraph(`metrl-hf-${c.family}-train`);
  const b = g.b;
  const d = c.headDim;
  const local = c.ropeLocalTheta !== null;
  const sliding = c.layerTypes.includes('sliding_attention');
  const embeds = b.input('inputs_embeds', 'float32', ['rows', c.hiddenSize]);
  const inputs: TrainInputs = {
    cos: b.input('rope_cos', 'float32', ['rows', 1, d]),
    sin: b.input('rope_sin', 'float32', ['rows', 1, d]),
    cosLocal: local ? b.input('rope_cos_local', 'float32', ['rows', 1, d]) : null,
    sinLocal: local ? b.input('rope_sin_local', 'float32', ['rows', 1, d]) : null,
    promptMask: b.input('prompt_mask', 'float32', ['rep_prompt', 'prompt']), // [rep·P, P]: tiled per folded query head
    promptMaskSliding: sliding ? b.input('prompt_mask_sliding', 'float32', ['rep_prompt', 'prompt']) : null,
    completionMask: b.input('completion_mask', 'float32', ['rep_completion', 'keys']), // [rep·C, P + C]
    completionMaskSliding: sliding ? b.input('completion_mask_sliding', 'float32', ['rep_completion', 'keys']) : null,
    rowSplits: b.input('row_splits', 'int64', [2]),
    scoreSplits: b.input('score_splits', 'int64', [2]),
    shapeQc: b.input('shape.qc', 'int64', [5]),
    shapeKc: b.input('shape.kc', 'int64', [4]),
    expandPrompt: b.input('shape.expand_prompt', 'int64', [4]),
  };
  const predictRows = b.input('predict_rows', 'int64', ['predicted']);
  const targets = b.input('targets', 'int64', ['predicted']);
  const invT = b.input('inv_temperature', 'float32', []);
  const ops = new HfTrainOps(g, c, lora, inputs, options.stored ?? 'float32');
  let x = g.constant(embeds, 2);
  weights.layers.forEach((w, i) => {
    x = decoderBlock(ops, c, w, i, x);
  });
  const rows = g.gatherRows(decoderFinalNorm(ops, c, weights, x), predictRows); // [R, H]
  const withGradients = b.input('with_gradients', 'bool', []);
  const targetGrads = b.input('target_grads', 'float32', ['predicted']);
  // The backward part runs only when `with_gradients` is true (an If node): the scoring pass and the gradient pass are
  // one session, so the weights are held once for both. Without gradients every grad output is an empty tensor.
  let gradients: ReturnType<typeof b.subgraph>;
  if (c.finalLogitSoftcap === null) {
    // The head in row chunks (hf-train-head.ts): no [R, V] tensor of all rows, and the backward starts at the rows.
    const head = chunkedHead(b, rows.name, ops.headWeight(weights.lmHead).name, invT, targets, c.vocabSize, c.hiddenSize, options.headChunkLogits);
    b.op1('Identity', [head.tokenLogp], {}, 'token_logp');
    b.op1('Identity', [head.tokenEntropy], {}, 'token_entropy');
    gradients = b.subgraph('gradients', () => gradientOutputs(g, ops, new Map([[rows.name, head.rowGradient(targetGrads)]])));
  } else {
    // Final soft-capping (Gemma 3 CausalLM checkpoints that set it): the whole head at once, through the autodiff.
    const z = g.mulConst(decoderLogits(ops, c, weights, rows), invT); // [R, V]
    const logp = b.op1('LogSoftmax', [z.name], { axis: -1 });
    const picked = b.op1('GatherElements', [logp, b.op1('Unsqueeze', [targets, b.ints([1])])], { axis: 1 }); // [R, 1]
    b.op1('Reshape', [picked, b.ints([-1])], {}, 'token_logp');
    b.op1('Neg', [b.op1('ReduceSum', [b.op1('Mul', [b.op1('Exp', [logp]), logp]), b.ints([-1])], { keepdims: 0 })], {}, 'token_entropy');
    gradients = b.subgraph('gradients', () => {
      // d/dz of Σ_r g_r log_softmax(z)[r, target_r] = g_r (onehot(target_r) − softmax(z)_r).
      const onehot = b.op1('OneHot', [targets, b.ints([c.vocabSize], []), b.floats('onehot_values', Float32Array.of(0, 1), [2])], { axis: -1 });
      const dz = b.op1('Mul', [b.op1('Sub', [onehot, b.op1('Exp', [logp])]), b.op1('Unsqueeze', [targetGrads, b.ints([1])])]);
      return gradientOutputs(g, ops, new Map([[z.name, dz]]));
    });
  }
  b.output('token_logp', 'float32', ['predicted']);
  b.output('token_entropy', 'float32', ['predicted']);
  const none = b.subgraph('no_gradients', () => ops.params.map(() => ({ name: b.op1('ConstantOfShape', [b.ints([0])]), type: 'float32' as const, dims: [0] })));
  const names = ops.params.map((p) => hfGradName(p.name));
  b.op('If', [withGradients], { then_branch: { graph: gradients }, else_branch: { graph: none } }, names);
  names.forEach((name) => b.output(name, 'float32', [`${name}.rows`, `${name}.cols`]));
  return b.toModel(17, options.maxInlineBytes ?? MAX_INLINE_BYTES, options.shared);
}
