// A Hugging Face decoder's LoRA gradients as one ONNX graph: the forward pass of
// one prompt group (a prompt and G of its completions) is the decoder's one definition (models/hf/decoder-ops.ts)
// executed over the differentiating builder (autodiff.ts, HfTrainOps below), which appends the backward pass. The tfjs
// forward (models/hf/decoder.ts, score.ts) executes the same definition and stays the reference; the gradients are
// tested against tfjs autodiff and finite differences on every fixture (tests/models/onnx-hf-learner.test.ts).
//
// What it computes. R predicted tokens: token j of completion m is predicted by the prompt's last row (j = 0) or by
// the completion's own row j − 1 (`predict_rows` [R]), its id is `targets` [R]. With z = head(final hidden) / T:
//   token_logp [R]     log_softmax(z)[target]
//   token_entropy [R]  the entropy of softmax(z) (no gradient flows through it: the trainer's losses use it as a mask)
// and, fed with_gradients true, the gradient of Σ_r g_r · token_logp_r (`target_grads` g [R]) with respect to every LoRA A
// and B (`grad.lora.<module>.a|b`): the learner puts g = dLoss/dlogp there, so by the chain rule these are dLoss/dA
// and dLoss/dB whatever the loss (it depends on the adapters only through the log-probs). The gradient pass starts
// from each layer's input hidden state that the forward pass returned and recomputes one layer at a time (see
// buildHfTrainGraph): its memory is one layer's activations, not the whole forward's.
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
import { UserError } from '../../../core/errors.ts';
import { DiffGraph, type Value } from '../autodiff.ts';
import { chunkedHead, chunkedHeadGradient } from './hf-train-head.ts';
import { logSoftmax, targetMinusSoftmax } from '../portable-ops.ts';
import { MAX_INLINE_BYTES, type GraphBuilder, type SerializedModel } from '../graph-builder.ts';
import type { GraphWeightOptions } from './hf-graph.ts';
import type { WeightDtype } from '../weight-encoding.ts';

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

/** What the graph's two branches share: initializers, and the LoRA params (graph inputs, declared once). */
class TrainDeclarations {
  /** Every LoRA param in the order first used (layer 0 first): the gradient outputs' order. */
  readonly params: Value[] = [];
  readonly paramDims = new Map<string, number[]>();
  readonly paramByName = new Map<string, Value>();
  /** Base weight → its initializer's name (stored type). */
  readonly initializers = new Map<WeightTensor, string>();
  norms = 0;
  ropeSigns = 0;
}

/**
 * The differentiating executor of the shared decoder block: values are DiffGraph values over the N packed rows
 * ([N, …]); LoRA A and B are params, base weights and embeddings constants. One per branch of the graph: nodes it
 * caches (a weight's Cast, RoPE's signed sines) live in the branch that made them; initializers and params are the
 * declarations' (shared).
 */
class HfTrainOps implements DecoderOps<Value> {
  private readonly b: GraphBuilder;
  /** Base weight → its float32 value in this branch (the initializer, or a Cast of a 16-bit one). */
  private readonly weightValues = new Map<WeightTensor, string>();
  private halves: { halves: string; swap: string } | null = null;
  private readonly signedSin = new Map<string, string>();
  /** The params read since the last takeUsed() (one layer's, in the recomputing branch). */
  private used: Value[] = [];

  constructor(
    private readonly g: DiffGraph,
    private readonly c: DecoderConfig,
    private readonly lora: HfTrainLoraSpec,
    private readonly inputs: TrainInputs,
    /** The stored type of the products' weights (weight-dtype.ts); norms and biases stay float32. */
    private readonly stored: WeightDtype,
    private readonly decl: TrainDeclarations,
  ) {
    this.b = g.b;
  }

  /** The params read since the previous call. */
  takeUsed(): Value[] {
    const used = this.used;
    this.used = [];
    return used;
  }

  /**
   * A base weight as an initializer (named as models/onnx/hf/hf-graph.ts names it, and in its type), added once however
   * often read: a float32 value (a Cast of it when stored 16-bit).
   */
  private weight(w: WeightTensor, name: string, data?: Float32Array, stored: WeightDtype = 'float32'): Value {
    let value = this.weightValues.get(w);
    if (value === undefined) {
      let init = this.decl.initializers.get(w);
      if (init === undefined)
        this.decl.initializers.set(
          w,
          (init = this.b.floats(
            stored === 'float32' ? name : `${name}.${stored}`,
            data ?? (() => values(w)),
            w.shape as number[],
            stored,
          )),
        );
      value = stored === 'float32' ? init : this.b.op1('Cast', [init], { to: 1 }); // 1: FLOAT
      this.weightValues.set(w, value);
    }
    return this.g.constant(value, w.shape.length);
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
    let v = this.decl.paramByName.get(name);
    if (!v) {
      v = this.g.param(name, dims);
      this.decl.paramByName.set(name, v);
      this.decl.params.push(v);
      this.decl.paramDims.set(name, dims);
    }
    this.used.push(v);
    return v;
  }

  rmsNorm(x: Value, weight: WeightTensor, eps: number, style: NormStyle): Value {
    let name = this.decl.initializers.get(weight);
    if (name === undefined) {
      const w = values(weight);
      // Gemma's (1 + w) in float32, as tfjs's add computes it.
      const gain = style === 'one_plus_w' ? Float32Array.from(w, (v) => Math.fround(v + 1)) : w;
      this.decl.initializers.set(weight, (name = this.b.floats(`norm.${this.decl.norms++}`, gain, [w.length])));
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
      this.signedSin.set(
        sin,
        (signed = this.b.op1('Mul', [sin, this.b.floats(`rope_signs.${this.decl.ropeSigns++}`, signs, [d])])),
      );
    }
    // Views [N·n, 2, d/2] (the halves swapped by a gather) and back to x's shape.
    this.halves ??= { halves: this.b.ints([-1, 2, d / 2]), swap: this.b.ints([1, 0]) };
    return this.g.rope(x, cos, signed, { ...this.halves, rows: this.b.op1('Shape', [x.name]) });
  }

  attention(q: Value, k: Value, v: Value, spec: AttentionSpec): Value {
    if (spec.softcap !== null)
      throw new UserError(
        'engine ort: the ONNX Runtime learner has no attention soft-capping (attn_logit_softcapping); use --engine tfjs for this checkpoint',
      );
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
    const qpH = g.reshape(
      g.transpose(g.reshape(qp, b.ints([-1, nkv, rep, d]), 4), [1, 2, 0, 3]),
      b.ints([0, -1, d]),
      3,
    );
    const kpH = g.transpose(kp, [1, 0, 2]);
    const vpH = g.transpose(vp, [1, 0, 2]);
    const promptOut = g.reshape(g.attention(qpH, kpH, vpH, promptMask), b.ints([0, rep, -1, d]), 4); // [nkv, rep, P, d]
    const promptRows = g.reshape(g.transpose(promptOut, [2, 0, 1, 3]), b.ints([-1, nh * d]), 2); // [P, nh·d]
    // The completions: queries [G, nkv, rep·C, d]; keys and values the prompt's [1, nkv, P, d] broadcast over G, then
    // their own [G, nkv, C, d], joined along the key axis.
    const qcH = g.reshape(g.transpose(g.reshape(qc, inp.shapeQc, 5), [0, 2, 3, 1, 4]), b.ints([0, 0, -1, d]), 4);
    const keysOf = (prompt: Value, own: Value) =>
      g.concat(
        [
          g.expand(g.reshape(prompt, b.ints([1, nkv, -1, d]), 4), inp.expandPrompt, [0]),
          g.transpose(g.reshape(own, inp.shapeKc, 4), [0, 2, 1, 3]),
        ],
        2,
        inp.scoreSplits,
      ); // [G, nkv, P + C, d]
    const completionOut = g.reshape(
      g.attention(qcH, keysOf(kpH, kc), keysOf(vpH, vc), completionMask),
      b.ints([0, 0, rep, -1, d]),
      5,
    ); // [G, nkv, rep, C, d]
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

/** The name of the graph input that carries layer `i`'s input hidden state [N, H] to the gradient branch (i ≥ 1). */
export const hfHiddenName = (i: number): string => `hidden.${i}`;

/**
 * The serialised training graph of a decoder (weights read from its tfjs variables) with LoRA params for `lora`'s
 * modules: one If node on `with_gradients` whose two branches are the learner's two passes.
 *   false  the forward: token_logp, token_entropy, and each layer's input hidden state hidden.1 … hidden.L [N, H]
 *          (hidden.L: the last layer's output, before the final norm). The learner's scoring pass, so the log-probs
 *          the loss sees come from the very forward the gradients differentiate.
 *   true   the gradient of Σ_r target_grads_r · token_logp_r for every LoRA A and B (grad.lora.*), from those hidden
 *          states fed back as inputs: the head and each layer are recomputed from their input, last layer first, and
 *          differentiated one at a time (gradient checkpointing at layer boundaries), so one layer's activations are
 *          held at a time instead of all of them (on SmolLM2-135M's shape at 704 rows: about 1.2 GB). Each layer's
 *          recomputation and backward is an If subgraph of its own, which ONNX Runtime runs whole, in order.
 * Outputs a branch does not compute are empty tensors; inputs a pass does not use are fed empty.
 */
export function buildHfTrainGraph(
  c: DecoderConfig,
  weights: DecoderWeights,
  lora: HfTrainLoraSpec,
  options: GraphWeightOptions = {},
): SerializedModel {
  if (lora.size === 0) throw new Error('the training graph needs LoRA adapters (it differentiates them)');
  const g = new DiffGraph(`metrl-hf-${c.family}-train`);
  const b = g.b;
  const d = c.headDim;
  const H = c.hiddenSize;
  const L = c.numLayers;
  const local = c.ropeLocalTheta !== null;
  const sliding = c.layerTypes.includes('sliding_attention');
  const embeds = b.input('inputs_embeds', 'float32', ['rows', H]);
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
  // Qwen3-VL DeepStack: [N, H] added after layer j (zeros but at the prompt's image rows). A constant, so the
  // gradient branch, which starts each layer from its fed input, needs nothing of it.
  const deepstack = Array.from({ length: c.deepstackLayers }, (_, j) =>
    b.input(`deepstack.${j}`, 'float32', ['rows', H]),
  );
  const predictRows = b.input('predict_rows', 'int64', ['predicted']);
  const targets = b.input('targets', 'int64', ['predicted']);
  const invT = b.input('inv_temperature', 'float32', []);
  const withGradients = b.input('with_gradients', 'bool', []);
  const targetGrads = b.input('target_grads', 'float32', ['predicted']);
  const hidden = Array.from({ length: L + 1 }, (_, i) =>
    i === 0 ? embeds : b.input(hfHiddenName(i), 'float32', ['hidden_rows', H]),
  );
  const decl = new TrainDeclarations();
  const stored = options.stored ?? 'float32';
  // An empty float32 tensor [0] (an Identity of one empty initializer: ORT folds it where it folds constants, and it
  // has a kernel on every provider, where ConstantOfShape has none on WebGPU).
  const none0 = b.floats('empty', new Float32Array(0), [0]);
  const empty = () => b.op1('Identity', [none0]);
  const softcap = c.finalLogitSoftcap !== null;

  // The forward branch: the decoder over all rows, the head on the predicted rows.
  const forward = b.subgraph('forward', () => {
    const ops = new HfTrainOps(g, c, lora, inputs, stored, decl);
    let x = g.constant(embeds, 2);
    const kept: string[] = [];
    weights.layers.forEach((w, i) => {
      if (i > 0) kept.push(b.op1('Identity', [x.name]));
      x = decoderBlock(ops, c, w, i, x);
      if (i < deepstack.length) x = ops.add(x, g.constant(deepstack[i], 2));
    });
    kept.push(b.op1('Identity', [x.name]));
    const rows = g.gatherRows(decoderFinalNorm(ops, c, weights, x), predictRows); // [R, H]
    let logp: string;
    let entropy: string;
    if (!softcap) {
      // The head in row chunks (hf-train-head.ts): no [R, V] tensor of all rows.
      const head = chunkedHead(
        b,
        rows.name,
        ops.headWeight(weights.lmHead).name,
        invT,
        targets,
        c.vocabSize,
        H,
        options.headChunkLogits,
      );
      logp = head.tokenLogp;
      entropy = head.tokenEntropy;
    } else {
      // Final soft-capping (Gemma 3 CausalLM checkpoints that set it): the whole head at once.
      const lsm = logSoftmax(b, g.mulConst(decoderLogits(ops, c, weights, rows), invT).name);
      logp = b.op1('Reshape', [
        b.op1('GatherElements', [lsm, b.op1('Unsqueeze', [targets, b.ints([1])])], { axis: 1 }),
        b.ints([-1]),
      ]);
      entropy = b.op1('Neg', [
        b.op1('ReduceSum', [b.op1('Mul', [b.op1('Exp', [lsm]), lsm]), b.ints([-1])], { keepdims: 0 }),
      ]);
    }
    return [
      { name: b.op1('Identity', [logp]), type: 'float32' as const, dims: ['predicted'] },
      { name: b.op1('Identity', [entropy]), type: 'float32' as const, dims: ['predicted'] },
      ...kept.map((name) => ({ name, type: 'float32' as const, dims: ['rows', H] })),
      ...decl.params.map(() => ({ name: empty(), type: 'float32' as const, dims: [0] })),
    ];
  });
  const params = [...decl.params];

  // The gradient branch: the head, then each layer from its fed input, last first.
  const gradients = b.subgraph('gradients', () => {
    const ops = new HfTrainOps(g, c, lora, inputs, stored, decl);
    const grads = new Map<string, string>();
    g.resetTape();
    const top = g.source(hidden[L], 2);
    const rows = g.gatherRows(decoderFinalNorm(ops, c, weights, top), predictRows); // [R, H]
    let seeds: Map<string, string>;
    if (!softcap) {
      const rowGradient = chunkedHeadGradient(
        b,
        rows.name,
        ops.headWeight(weights.lmHead).name,
        invT,
        targets,
        c.vocabSize,
        H,
        options.headChunkLogits,
      );
      seeds = new Map([[rows.name, rowGradient(targetGrads)]]);
    } else {
      // d/dz of Σ_r g_r log_softmax(z)[r, target_r] = g_r (onehot(target_r) − softmax(z)_r).
      const z = g.mulConst(decoderLogits(ops, c, weights, rows), invT); // [R, V]
      const p = b.op1('Softmax', [z.name], { axis: -1 });
      const column = (x: string) => b.op1('Unsqueeze', [x, b.ints([1])]); // [R] → [R, 1]
      seeds = new Map([[z.name, targetMinusSoftmax(b, p, column(targets), column(targetGrads))]]);
    }
    let dOut = g.backward(seeds, [top]).get(top.name);
    if (!dOut) throw new Error('no gradient reaches the last hidden state');
    for (let i = L - 1; i >= 0; i--) {
      // Layer i recomputed from its input and differentiated inside an If node of its own (always taken: this branch
      // runs with gradients): ONNX Runtime runs a subgraph whole, so the layers go strictly one after another and a
      // layer's activations are freed when its subgraph ends; and it plans each small subgraph apart (one plan for the
      // whole branch took it about three times as long to open the session).
      const upstream = dOut;
      let used: Value[] = [];
      let outs: { name: string; type: 'float32'; dims: (number | string)[] }[] = [];
      const layer = b.subgraph(`gradients_layer_${i}`, () => {
        g.resetTape();
        const lops = new HfTrainOps(g, c, lora, inputs, stored, decl);
        const x = i > 0 ? g.source(hidden[i], 2) : g.constant(hidden[i], 2);
        const y = decoderBlock(lops, c, weights.layers[i], i, x);
        used = lops.takeUsed();
        const got = g.backward(new Map([[y.name, upstream]]), i > 0 ? [x, ...used] : used);
        const grad = (name: string) => {
          const found = got.get(name);
          if (!found) throw new Error(`no gradient reaches ${name}`);
          return { name: b.op1('Identity', [found]), type: 'float32' as const };
        };
        outs = [
          ...(i > 0 ? [{ ...grad(x.name), dims: ['rows', H] }] : []),
          ...used.map((p) => ({ ...grad(p.name), dims: decl.paramDims.get(p.name)! })),
        ];
        return outs;
      });
      const none = b.subgraph(`gradients_layer_${i}_none`, () => outs.map((o) => ({ ...o, name: empty(), dims: [0] })));
      const results = b.op(
        'If',
        [withGradients],
        { then_branch: { graph: layer }, else_branch: { graph: none } },
        outs.length,
      );
      if (i > 0) dOut = results[0];
      used.forEach((p, k) => grads.set(p.name, results[k + (i > 0 ? 1 : 0)]));
    }
    return [
      { name: empty(), type: 'float32' as const, dims: [0] },
      { name: empty(), type: 'float32' as const, dims: [0] },
      ...hidden.slice(1).map(() => ({ name: empty(), type: 'float32' as const, dims: [0] })),
      ...params.map((p) => ({ name: grads.get(p.name)!, type: 'float32' as const, dims: decl.paramDims.get(p.name)! })),
    ];
  });
  const gradNames = params.map((p) => hfGradName(p.name));
  const hiddenNames = hidden.slice(1).map((_, i) => `${hfHiddenName(i + 1)}.out`);
  b.op('If', [withGradients], { then_branch: { graph: gradients }, else_branch: { graph: forward } }, [
    'token_logp',
    'token_entropy',
    ...hiddenNames,
    ...gradNames,
  ]);
  b.output('token_logp', 'float32', ['predicted']);
  b.output('token_entropy', 'float32', ['predicted']);
  hiddenNames.forEach((name) => b.output(name, 'float32', [`${name}.rows`, `${name}.cols`]));
  gradNames.forEach((name) => b.output(name, 'float32', [`${name}.rows`, `${name}.cols`]));
  return b.toModel(17, options.maxInlineBytes ?? MAX_INLINE_BYTES, options.shared);
}
