// The built-in model's LoRA gradients as one ONNX graph: the forward pass of one
// prompt group (a prompt and its G completions) is the model's one definition (models/builtin/model-ops.ts) executed
// over the differentiating builder (autodiff.ts, TrainOps below), which appends the backward pass. The tfjs forward
// (models/builtin/transformer.ts, scoring.ts) executes the same definition and stays the reference: same RoPE tables
// and rotation, RMSNorm, GELU approximation and LoRA product order ((x A) · scale) B; the gradients are tested against
// tfjs autodiff and finite differences (tests/models/onnx-learner.test.ts).
//
// What it computes: with logits z = (final hidden · lm_head) / T and W = `target_weights` [N, V], the gradient of
//   Σ_rows Σ_v W[row, v] · log_softmax(z)[row, v]
// with respect to every LoRA A and B (`grad.lora.<layer>.<proj>.a|b`). The learner puts g = dLoss/dlogp at each
// completion token's (row, id), so by the chain rule these are dLoss/dA and dLoss/dB, whatever the loss (the loss
// depends on the parameters only through the log-probs). The graph also returns log_softmax(z) [N, V]; built without
// the backward part it is the learner's scoring pass.
//
// Rows: N = P + G·C packed rows, the prompt's P tokens, then completion 0's C input tokens, completion 1's … (as
// scoring.ts lays them: completion tokens 0 … C-1 are inputs, C = longest completion − 1). The row-wise work (norms,
// projections, MLP, head) is one 2-D product over all N rows; attention splits them:
//   prompt      causal self-attention over P keys                          [H, P, P]
//   completions each attends to the prompt's P keys and causally to its own C keys: [G, H, C, P + C], one softmax,
//               its queries in QUERY_BLOCKS blocks, each block's scores stopping at its own last key
// The prompt's keys and values are computed once for the group and receive the gradient of all G completions, as in
// scoring.ts. Embeddings, image patches and base weights are constants: no gradient nodes for them.
import { headDim, patchDim, type Architecture } from '../../builtin/config.ts';
import type { LayerWeights, ModelWeights, Projection } from '../../builtin/weights.ts';
import { block, embed, head, type BuiltinOps, type Weight } from '../../builtin/model-ops.ts';
import { DiffGraph, type Value } from '../autodiff.ts';
import { QKV, weightNames, type BuiltinGraphSpec, type LoraSpec } from './builtin-graph.ts';
import type { GraphBuilder } from '../graph-builder.ts';
import { logSoftmax } from '../portable-ops.ts';

/** Name of a LoRA param input (raw A [in, r] and B [r, out], as the tfjs variables hold them). */
export const trainLoraName = (layer: number, projection: Projection, part: 'a' | 'b'): string =>
  `lora.${layer}.${projection}.${part}`;
/**
 * How many blocks the completions' queries attend in (the learner lays completions out with at least this many rows).
 * Measured on the chess learner pass at one thread (4 groups × 8 × 376 tokens, CPU seconds, medians of 6 interleaved
 * in one process at load 10-12): one run per learner chunk and group with one block (main before) 5.36; one run per
 * group with 2 blocks 4.55, 4 blocks 4.11, 6 blocks 4.53.
 */
export const QUERY_BLOCKS = 4;
/** Name of the gradient output of a LoRA param. */
export const gradName = (param: string): string => `grad.${param}`;

const values = (v: Weight): Float32Array => v.dataSync() as Float32Array;

/** What travels from this executor's `qkv` to its `attention`: q (RoPE applied, scaled), k (RoPE applied), v, [N, d]. */
interface TrainQkv {
  q: Value;
  k: Value;
  v: Value;
}

/** The graph inputs the ops read (declared before the definition runs, so the graph's input order is fixed). */
interface TrainInputs {
  ids: string;
  pixels: string;
  slots: string;
  patchIndex: string;
  cos: string;
  sin: string;
  promptMask: string;
  /** Per query block i: additive mask [Cᵢ, P + C₀ + … + Cᵢ]. */
  blockMasks: string[];
  /** [C₀, …, Cₙ₋₁] */
  querySplits: string;
  /** Per block i < n − 1: [P + C₀ + … + Cᵢ, rest], its keys the first part. */
  keySplits: string[];
  rowSplits: string;
  scoreSplits: string;
  gChd: string;
  g111: string;
}

/**
 * The differentiating executor of the built-in model's definition (models/builtin/model-ops.ts): values are DiffGraph
 * values over N packed rows [N, …]; LoRA A and B are params (the gradients' targets), embeddings and base weights
 * constants. Records every LoRA param it creates (`params`, `paramDims`) for the backward pass and the outputs.
 */
class TrainOps implements BuiltinOps<Value, TrainQkv> {
  readonly params: Value[] = [];
  readonly paramDims = new Map<string, number[]>();
  private readonly names: Map<Weight, string>;
  private readonly b: GraphBuilder;
  private readonly d: number;
  private readonly rot: { halves: string; rows: string; swap: string };
  private readonly signedSin: string;
  private readonly scalars = new Map<number, string>();
  private readonly shapes: { rowsToHeads: string; headsToRows: string; oneHPdh: string; thirds: string };

  constructor(
    private readonly g: DiffGraph,
    arch: Architecture,
    weights: ModelWeights,
    private readonly lora: LoraSpec,
    private readonly inputs: TrainInputs,
  ) {
    const b = (this.b = g.b);
    const d = (this.d = arch.dModel);
    const H = arch.nHeads;
    const dh = headDim(arch);
    this.names = weightNames(weights);
    // RoPE's rotate_half as swapped half-head blocks (autodiff.ts rope): views [N·H, 2, dh/2] and back [N, d], and
    // sin with rotate_half's signs folded in (−1 on each head's first half), once for all layers.
    this.rot = { halves: b.ints([-1, 2, dh / 2]), rows: b.ints([-1, d]), swap: b.ints([1, 0]) };
    const signs = new Float32Array(d);
    for (let i = 0; i < d; i++) signs[i] = i % dh < dh / 2 ? -1 : 1;
    this.signedSin = b.op1('Mul', [inputs.sin, b.floats('rope_signs', signs, [d])]);
    this.shapes = {
      rowsToHeads: b.ints([-1, H, dh]),
      headsToRows: b.ints([-1, d]),
      oneHPdh: b.ints([1, H, -1, dh]),
      thirds: b.ints([d, d, d]),
    };
  }

  /** A float32 scalar initializer, one per value. */
  private scalar(c: number): string {
    let name = this.scalars.get(c);
    if (name === undefined) this.scalars.set(c, (name = this.b.scalar(c)));
    return name;
  }

  private weight(w: Weight): Value {
    const name = this.names.get(w);
    if (name === undefined) throw new Error('builtin-train-graph: a weight outside the model');
    return this.initializer(name, values(w), w.shape);
  }

  private initializer(name: string, data: Float32Array, dims: number[]): Value {
    return this.g.constant(this.b.floats(name, data, dims), dims.length);
  }

  /** A node of constants only (embeddings, image patches): no gradient nodes. */
  private constant(x: string, rank: number): Value {
    return this.g.constant(x, rank);
  }

  embedTokens(table: Weight): Value {
    return this.constant(this.b.op1('Gather', [this.weight(table).name, this.inputs.ids]), 2);
  }

  patchPixels(): Value {
    return this.constant(this.inputs.pixels, 2);
  }

  patchPositions(table: Weight): Value {
    return this.constant(this.b.op1('Gather', [this.weight(table).name, this.inputs.slots]), 2);
  }

  /** Patches projected once per distinct patch, placed by a gather from [0; patches] (row 0 = no patch). */
  placePatches(x: Value, patches: Value): Value {
    if (x.diff || patches.diff) throw new Error('builtin-train-graph: embeddings are constants here');
    const b = this.b;
    const table = b.op1('Concat', [b.floats('no_patch', new Float32Array(this.d), [1, this.d]), patches.name], {
      axis: 0,
    });
    return this.constant(b.op1('Add', [x.name, b.op1('Gather', [table, this.inputs.patchIndex])]), 2); // [N, d]
  }

  subScalar(x: Value, c: number): Value {
    if (x.diff) throw new Error('builtin-train-graph: subScalar of a differentiated value');
    return this.constant(this.b.op1('Sub', [x.name, this.b.scalar(c)]), x.rank);
  }

  project(x: Value, w: Weight): Value {
    return this.g.matmul(x, this.weight(w));
  }

  /** base (+ ((input A) · scale) B when p is a target): lora.ts linear's order. */
  private withLora(input: Value, base: Value, layer: number, p: Projection, inDim: number, outDim: number): Value {
    const { g, lora } = this;
    if (!lora.targets.includes(p)) return base;
    const a = this.param(layer, p, 'a', [inDim, lora.r]);
    const bb = this.param(layer, p, 'b', [lora.r, outDim]);
    this.params.push(a, bb);
    return g.add(base, g.matmul(g.mulConst(g.matmul(input, a), this.scalar(lora.scale)), bb));
  }

  private param(layer: number, p: Projection, part: 'a' | 'b', dims: number[]): Value {
    const v = this.g.param(trainLoraName(layer, p, part), dims);
    this.paramDims.set(v.name, dims);
    return v;
  }

  linear(x: Value, w: Weight, layer: number, projection: Projection): Value {
    const [inDim, outDim] = w.shape;
    return this.withLora(x, this.g.matmul(x, this.weight(w)), layer, projection, inDim, outDim);
  }

  addBias(x: Value, bias: Weight): Value {
    return this.g.add(x, this.weight(bias));
  }

  add(a: Value, c: Value): Value {
    return this.g.add(a, c);
  }

  rmsNorm(x: Value, gain: Weight, eps: number): Value {
    return this.g.rmsNorm(x, this.weight(gain).name, eps);
  }

  sigmoidGelu(x: Value, k: number): Value {
    return this.g.gelu(x, k);
  }

  /**
   * q, k, v: one base product with W_qkv = [Wq | Wk | Wv], split; the adapters' A's side by side in one product
   * (x [A_q | A_k | A_v], [N, 3r] for the targets among them), then each part times its own B; RoPE on q and k.
   */
  qkv(h: Value, w: LayerWeights, layer: number, qScale: number): TrainQkv {
    const { g, b, d, lora } = this;
    const joined = new Float32Array(d * 3 * d);
    QKV.forEach((p, j) => {
      const wp = values(w.proj[p]);
      for (let r = 0; r < d; r++) joined.set(wp.subarray(r * d, (r + 1) * d), r * 3 * d + j * d);
    });
    const bases = g.split(
      g.matmul(h, this.initializer(`layers.${layer}.qkv_proj`, joined, [d, 3 * d])),
      1,
      this.shapes.thirds,
      3,
    );
    const out = [...bases];
    const targets = QKV.map((p, j) => ({ p, j })).filter(({ p }) => lora.targets.includes(p));
    if (targets.length > 0) {
      const as = targets.map(({ p }) => this.param(layer, p, 'a', [d, lora.r]));
      const ranks = b.ints(targets.map(() => lora.r));
      const low = g.mulConst(g.matmul(h, as.length === 1 ? as[0] : g.concat(as, 1, ranks)), this.scalar(lora.scale)); // [N, t·r]
      const parts = as.length === 1 ? [low] : g.split(low, 1, ranks, as.length);
      targets.forEach(({ p, j }, t) => {
        const bb = this.param(layer, p, 'b', [lora.r, d]);
        this.params.push(as[t], bb);
        out[j] = g.add(bases[j], g.matmul(parts[t], bb));
      });
    }
    const [qLin, kLin, v] = out;
    const { cos } = this.inputs;
    return {
      q: g.mulConst(g.rope(qLin, cos, this.signedSin, this.rot), this.scalar(qScale)),
      k: g.rope(kLin, cos, this.signedSin, this.rot),
      v,
    };
  }

  /**
   * The prompt's causal self-attention, and each completion's attention to the prompt's keys and, causally, its own:
   * the prompt's keys and values are broadcast to the G completions and put in front of theirs ([G, H, P + C, dh]), so
   * one product gives the scores and one the mixture (the score matrix, the largest tensor here, is never
   * concatenated, split or transposed).
   */
  attention({ q, k, v }: TrainQkv): Value {
    const { g } = this;
    const { rowSplits, scoreSplits, gChd, g111, promptMask, blockMasks, querySplits, keySplits } = this.inputs;
    const { rowsToHeads, headsToRows, oneHPdh } = this.shapes;
    const [qp, qc] = g.split(q, 0, rowSplits, 2); // [P, d], [G·C, d]
    const [kp, kc] = g.split(k, 0, rowSplits, 2);
    const [vp, vc] = g.split(v, 0, rowSplits, 2);
    const promptHeads = (t: Value) => g.transpose(g.reshape(t, rowsToHeads, 3), [1, 0, 2]); // [P, d] → [H, P, dh]
    const completionHeads = (t: Value) => g.transpose(g.reshape(t, gChd, 4), [0, 2, 1, 3]); // [G·C, d] → [G, H, C, dh]
    const kpH = promptHeads(kp);
    const vpH = promptHeads(vp);
    const promptOut = g.reshape(
      g.transpose(g.attention(promptHeads(qp), kpH, vpH, promptMask), [1, 0, 2]),
      headsToRows,
      2,
    ); // [P, d]
    const keysOf = (prompt: Value, own: Value) =>
      g.concat([g.expand(g.reshape(prompt, oneHPdh, 4), g111, [0]), completionHeads(own)], 2, scoreSplits);
    const [keys, vals] = [keysOf(kpH, kc), keysOf(vpH, vc)]; // [G, H, P + C, dh]
    // The completions' queries in QUERY_BLOCKS blocks of about C / n rows: block i sees the prompt and its own keys up
    // to its last row only, so its scores are [G, H, Cᵢ, P + C₀ + … + Cᵢ] instead of [G, H, Cᵢ, P + C]: of the causal
    // [C, C] part, whose upper half is masked, (n − 1) / 2n is not computed (4 blocks: 23% of the attention entries at
    // chess's sizes).
    const blocks = g.split(completionHeads(qc), 2, querySplits, QUERY_BLOCKS); // [G, H, Cᵢ, dh]
    const upTo = (t: Value, i: number) => (i === QUERY_BLOCKS - 1 ? t : g.split(t, 2, keySplits[i], 2)[0]);
    const mixed = g.concat(
      blocks.map((qi, i) => g.attention(qi, upTo(keys, i), upTo(vals, i), blockMasks[i])),
      2,
      querySplits,
    ); // [G, H, C, dh]
    const completionOut = g.reshape(g.transpose(mixed, [0, 2, 1, 3]), headsToRows, 2); // [G·C, d]
    return g.concat([promptOut, completionOut], 0, rowSplits); // [N, d]
  }
}

/**
 * The serialised training graph for `weights` with LoRA params per spec.lora (required). `gradients: false` gives the
 * same forward pass alone (log_probs only, no target_weights input): the learner's scoring pass, so the log-probs the
 * loss sees come from the very forward the gradients differentiate.
 */
export function buildBuiltinTrainGraph(
  spec: BuiltinGraphSpec,
  weights: ModelWeights,
  options: { gradients?: boolean } = {},
): Uint8Array {
  const withGradients = options.gradients ?? true;
  const { arch } = spec;
  const lora = spec.lora;
  if (!lora) throw new Error('the training graph needs LoRA settings (it differentiates the adapters)');
  const d = arch.dModel;
  const V = arch.vocabSize;
  const g = new DiffGraph('metrl-vlm-train');
  const b = g.b;
  const inputs: TrainInputs = {
    ids: b.input('input_ids', 'int64', ['rows']),
    pixels: b.input('patch_pixels', 'float32', ['patches', patchDim(arch)]),
    slots: b.input('patch_slots', 'int64', ['patches']),
    patchIndex: b.input('patch_index', 'int64', ['rows']),
    cos: b.input('rope_cos', 'float32', ['rows', d]),
    sin: b.input('rope_sin', 'float32', ['rows', d]),
    promptMask: b.input('prompt_mask', 'float32', ['prompt', 'prompt']), // additive, causal
    blockMasks: Array.from({ length: QUERY_BLOCKS }, (_, i) =>
      b.input(`completion_mask.${i}`, 'float32', [`block${i}`, `keys${i}`]),
    ),
    querySplits: b.input('query_splits', 'int64', [QUERY_BLOCKS]),
    keySplits: Array.from({ length: QUERY_BLOCKS - 1 }, (_, i) => b.input(`key_splits.${i}`, 'int64', [2])),
    rowSplits: b.input('row_splits', 'int64', [2]), // [P, G·C]
    scoreSplits: b.input('score_splits', 'int64', [2]), // [P, C]
    gChd: b.input('shape.g_c_h_dh', 'int64', [4]), // [G, C, H, dh]
    g111: b.input('shape.g_1_1_1', 'int64', [4]), // [G, 1, 1, 1]: the prompt's keys broadcast to G completions
  };
  const invT = b.input('inv_temperature', 'float32', []);
  const ops = new TrainOps(g, arch, weights, lora, inputs);
  let x = embed(ops, weights); // [N, d]
  weights.layers.forEach((layer, i) => {
    x = block(ops, arch, layer, i, x);
  });
  const z = g.mulConst(head(ops, arch, weights, x), invT);
  logSoftmax(b, z.name, 'log_probs');
  b.output('log_probs', 'float32', ['rows', V]);
  if (!withGradients) return b.toBytes();
  // d/dz of Σ W ⊙ log_softmax(z) = W − softmax(z) · Σ_v W.
  const targetWeights = b.input('target_weights', 'float32', ['rows', V]);
  const dz = b.op1('Sub', [
    targetWeights,
    b.op1('Mul', [
      b.op1('Softmax', [z.name], { axis: -1 }),
      b.op1('ReduceSum', [targetWeights, b.ints([-1])], { keepdims: 1 }),
    ]),
  ]);
  const grads = g.backward(new Map([[z.name, dz]]), ops.params);
  for (const p of ops.params) {
    const grad = grads.get(p.name);
    if (!grad) throw new Error(`no gradient reaches ${p.name}`);
    b.op1('Identity', [grad], {}, gradName(p.name));
    b.output(gradName(p.name), 'float32', ops.paramDims.get(p.name)!);
  }
  return b.toBytes();
}
