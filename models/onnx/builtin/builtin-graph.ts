// The built-in model's forward pass as ONNX graphs, generated from the model's
// one definition (models/builtin/model-ops.ts), which the tfjs forward (models/builtin/transformer.ts) executes too:
// this file is that definition's ONNX inference executor (OnnxBuiltinOps emits each op as nodes through GraphBuilder)
// and the graphs' inputs and outputs around it. tfjs stays the reference the graphs are tested against
// (tests/models/onnx-builtin.test.ts); the executors share the RoPE rotation, GELU constant, query scale and LoRA
// product order through the definition, so the two agree to float rounding.
//
// Two graphs over one set of weights (a model this small spends its decoding time on reading the KV caches and on
// per-node work, not on FLOPs, so the decode step gets a graph of its own with as few nodes as the layout allows):
//
// `general` (prefill, scoring, the full forward): S new tokens per row attend to the keys/values of an optional shared
// prompt, one per group of G rows (B = U·G), [U, H, P, dh] (repeated for each row inside the graph, a small copy), and
// to this call's S keys causally: one com.microsoft MultiHeadAttention per layer with the additive mask `attn_bias`
// [B, 1, S, P + S] (0 visible, -1e9 hidden), so a row's [S, P + S] scores are masked and normalised while in cache.
// Outputs: logits [B, S, V], this call's keys (RoPE applied) and values per layer [B, H, S, dh].
//
// `decode` (one token per row, S = 1): keys of three kinds, concatenated along the score axis (the big caches are never
// concatenated or copied by ORT): the shared prompt's [U, H, P, dh], each row's own earlier ones (unfilled positions
// masked) and the new one. Every attention tensor is laid out group-major [U, H, G, …], so the G rows of a prompt
// meet its shared cache as one [G, dh] × [dh, P] product with no regrouping, and each row's own cache is
// [U, H, G, T, dh] (the layout the sampler writes in place); the new key is a dot product (ReduceSum), not a product
// against a causal mask. Keys stay [.., len, dh] as computed: scores are Transpose + MatMul, which ORT's CPU optimizer
// fuses into com.microsoft FusedMatMul with transB (measured faster than MatMul against keys stored transposed, and no
// transposing copy), while WebGPU, which has no FusedMatMul, runs the pair (portable-ops.ts). Mask `attn_bias`
// [U, 1, G, P + T + 1]; outputs: logits [B, 1, V] (rows u·G + g) and keys/values per layer [U, H, G, dh].
//
// Both (the executor's fusions, each behind one op of the definition): `qkv` folds RoPE into the q/k weights. rope(x W) = (x W)·cos + (x W R)·sin with R the per-head rotate-half
// matrix (transformer.ts rotationValues, a signed permutation, so W R is exact), so one product gives
// [q | k | q R | k R | v] = x [Wq·s | Wk | Wq R·s | Wk R | Wv] (s = 1/√dh, the query scale) and RoPE is two Muls and an
// Add on [B, S, 2d] with the tables [cos | cos], [sin | sin] (ropeValues, fed by the caller). `add` returns a pending
// residual sum that the next `rmsNorm` fuses into one node (com.microsoft SkipSimplifiedLayerNormalization); ORT
// fuses the sigmoid GELU into QuickGelu.
// The base weights are initializers, which ORT prepacks for its GEMM (fed as inputs instead, the same products ran
// slower: docs/engines.md). LoRA: A [in, r] and B [r, out] of every adapted projection are graph inputs
// (`lora.<layer>.<proj>.a/b`; for q, k, v one pair, A' = scale·[Aq | Ak | Av] [d, 3r] and B' [3r, 5d] laid out as the
// joined weight: rows of Aq → [Bq·s | 0 | Bq R·s | 0 | 0], of Ak → [0 | Bk | 0 | Bk R | 0], of Av → [0 | 0 | 0 | 0 | Bv]),
// so an update never rebuilds a session: the caller feeds the learner's current values (A pre-multiplied by alpha / r).
// A graph built without LoRA serves the reference policy (no zero-B products).
import { headDim, patchDim, type Architecture } from '../../builtin/config.ts';
import type { LayerWeights, ModelWeights, Projection } from '../../builtin/weights.ts';
import { block, embed, head, type BuiltinOps, type Weight } from '../../builtin/model-ops.ts';
import type { LoraConfig } from '../../builtin/config.ts';
import { GraphBuilder, MS_DOMAIN } from '../graph-builder.ts';
import { matMulTransposed } from '../portable-ops.ts';
import { rotationValues } from '../../builtin/rope.ts';

export type GraphMode = 'general' | 'decode';

/** What a graph was built for: the LoRA inputs it has (null: none, the base model). */
export interface LoraSpec {
  r: number;
  scale: number;
  targets: readonly Projection[];
}

/** A graph's architecture and, when it has LoRA inputs, their settings (what the training graph is built from). */
export interface BuiltinGraphSpec {
  arch: Architecture;
  lora: LoraSpec | null;
}

export function loraSpec(config: LoraConfig | null): LoraSpec | null {
  return config ? { r: config.r, scale: config.alpha / config.r, targets: config.targetModules } : null;
}

/** The attention projections, joined into one product (and one LoRA pair) in the graph. */
export const QKV = ['q_proj', 'k_proj', 'v_proj'] as const satisfies readonly Projection[];

/** Name of a LoRA input: `lora.<layer>.<proj>.a|b` for o/up/down, `lora.<layer>.qkv.a|b` for the joined q/k/v. */
export const loraInputName = (layer: number, projection: Projection | 'qkv', part: 'a' | 'b'): string =>
  `lora.${layer}.${projection}.${part}`;

/** row-major [n, k] × [k, m]. */
function matmul(a: Float32Array, b: Float32Array, n: number, k: number, m: number): Float32Array {
  const out = new Float32Array(n * m);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < k; j++) {
      const x = a[i * k + j];
      if (x === 0) continue;
      for (let c = 0; c < m; c++) out[i * m + c] += x * b[j * m + c];
    }
  }
  return out;
}

/** Columns [q·s | k | q R·s | k R | v] of the joined q/k/v weight from q, k, v blocks [rows, d] (see the header; s is
 *  the definition's query scale, model-ops.ts queryScale). */
export function joinQkv(
  arch: Architecture,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  rows: number,
  s: number,
): Float32Array {
  const d = arch.dModel;
  const rot = rotationValues(arch);
  const qs = Float32Array.from(q, (x) => x * s);
  const blocks = [qs, k, matmul(qs, rot, rows, d, d), matmul(k, rot, rows, d, d), v];
  const joined = new Float32Array(rows * 5 * d);
  blocks.forEach((w, j) => {
    for (let r = 0; r < rows; r++) joined.set(w.subarray(r * d, (r + 1) * d), r * 5 * d + j * d);
  });
  return joined;
}

const values = (v: Weight): Float32Array => v.dataSync() as Float32Array;

/**
 * The initializer name of every base weight (the names both ONNX executors give them; the LoRA inputs' and the
 * session's feeds do not depend on them). Read from the structure, without importing tfjs (worker threads load this).
 */
export function weightNames(weights: ModelWeights): Map<Weight, string> {
  const names = new Map<Weight, string>([
    [weights.embed, 'embed'],
    [weights.patchProj, 'patch_proj'],
    [weights.patchBias, 'patch_bias'],
    [weights.patchPos, 'patch_pos'],
    [weights.finalNorm, 'final_norm'],
    [weights.lmHead, 'lm_head'],
  ]);
  weights.layers.forEach((layer, i) => {
    names.set(layer.attnNorm, `layers.${i}.attn_norm`);
    names.set(layer.mlpNorm, `layers.${i}.mlp_norm`);
    for (const [p, w] of Object.entries(layer.proj)) names.set(w, `layers.${i}.${p}`);
  });
  return names;
}

/** What travels from this executor's `qkv` to its `attention`: [q·s | k] with RoPE applied [B, S, 2d], and v [B, S, d]. */
interface OnnxQkv {
  qk: string;
  v: string;
}

/** The graph inputs the ops read (declared before the definition runs, so the graph's input order is fixed). */
interface PassInputs {
  ids: string;
  cos: string;
  sin: string;
  bias: string;
  /** general mode: the image patches and where they go; null in decode mode. */
  patches: { pixels: string; slots: string; index: string } | null;
  shapes: Record<string, string>;
}

/**
 * The ONNX inference executor of the built-in model's definition (models/builtin/model-ops.ts): values are graph value
 * names, rows [B, S, …]. `add` returns a pending sum (a key of `pending`, never a graph name): the RMSNorm that reads it
 * emits SkipSimplifiedLayerNormalization (the norm and the sum in one node), any other reader materialises it as an Add.
 */
class OnnxBuiltinOps implements BuiltinOps<string, OnnxQkv> {
  private readonly pending = new Map<string, { a: string; b: string; sum: string | null }>();
  private readonly names: Map<Weight, string>;

  constructor(
    private readonly b: GraphBuilder,
    private readonly arch: Architecture,
    weights: ModelWeights,
    private readonly lora: LoraSpec | null,
    private readonly mode: GraphMode,
    private readonly inputs: PassInputs,
    private readonly fusedAttention: boolean,
  ) {
    this.names = weightNames(weights);
  }

  /** A value name, materialising a pending sum. */
  private val(x: string): string {
    const p = this.pending.get(x);
    if (!p) return x;
    if (p.sum === null) p.sum = this.b.op1('Add', [this.val(p.a), this.val(p.b)]);
    return p.sum;
  }

  private weight(w: Weight): string {
    const name = this.names.get(w);
    if (name === undefined) throw new Error('builtin-graph: a weight outside the model');
    return this.b.floats(name, values(w), w.shape);
  }

  embedTokens(table: Weight): string {
    return this.b.op1('Gather', [this.weight(table), this.inputs.ids]); // [B, S, d]
  }

  patchPixels(): string | null {
    return this.inputs.patches?.pixels ?? null;
  }

  patchPositions(table: Weight): string {
    return this.b.op1('Gather', [this.weight(table), this.inputs.patches!.slots]);
  }

  /** Patches projected once per distinct patch, placed by a gather from [0; patches] (row 0 = no patch). */
  placePatches(x: string, patches: string): string {
    const b = this.b;
    const table = b.op1(
      'Concat',
      [b.floats('no_patch', new Float32Array(this.arch.dModel), [1, this.arch.dModel]), this.val(patches)],
      { axis: 0 },
    ); // [1 + patches, d]
    return b.op1('Add', [this.val(x), b.op1('Gather', [table, this.inputs.patches!.index])]); // [B, S, d]
  }

  subScalar(x: string, c: number): string {
    return this.b.op1('Sub', [this.val(x), this.b.scalar(c)]);
  }

  /** The output head's product is the graph output `logits`. */
  project(x: string, w: Weight): string {
    return this.b.op1(
      'MatMul',
      [this.val(x), this.weight(w)],
      {},
      this.names.get(w) === 'lm_head' ? 'logits' : undefined,
    );
  }

  /** x W (+ (x A') B with A' = scale · A, fed pre-scaled: lora.ts linear's function, one node fewer). */
  private withLora(input: string, base: string, name: string, inDim: number, rank: number, outDim: number): string {
    const b = this.b;
    const a = b.input(`lora.${name}.a`, 'float32', [inDim, rank]);
    const bb = b.input(`lora.${name}.b`, 'float32', [rank, outDim]);
    return b.op1('Add', [base, b.op1('MatMul', [b.op1('MatMul', [input, a]), bb])]);
  }

  linear(x: string, w: Weight, layer: number, projection: Projection): string {
    const input = this.val(x);
    const [inDim, outDim] = w.shape;
    const base = this.b.op1('MatMul', [input, this.weight(w)]);
    if (!this.lora || !this.lora.targets.includes(projection)) return base;
    return this.withLora(input, base, `${layer}.${projection}`, inDim, this.lora.r, outDim);
  }

  addBias(x: string, bias: Weight): string {
    return this.b.op1('Add', [this.val(x), this.weight(bias)]);
  }

  add(a: string, c: string): string {
    const key = `pending:${this.pending.size}`;
    this.pending.set(key, { a, b: c, sum: null });
    return key;
  }

  rmsNorm(x: string, gain: Weight, eps: number): string {
    const g = this.weight(gain);
    const p = this.pending.get(x);
    if (p && p.sum === null) {
      const [normed, , , sum] = this.b.op(
        'SkipSimplifiedLayerNormalization',
        [this.val(p.a), this.val(p.b), g],
        { epsilon: { float: eps } },
        4,
        MS_DOMAIN,
      );
      p.sum = sum;
      return normed;
    }
    return this.b.op1('SimplifiedLayerNormalization', [this.val(x), g], { axis: -1, epsilon: { float: eps } });
  }

  sigmoidGelu(x: string, k: number): string {
    const b = this.b;
    const input = this.val(x);
    return b.op1('Mul', [input, b.op1('Sigmoid', [b.op1('Mul', [input, b.scalar(k)])])]); // ORT fuses it into QuickGelu
  }

  /** One product with the joined weight [q·s | k | q R·s | k R | v] (see the header), RoPE as two Muls and an Add. */
  qkv(h: string, w: LayerWeights, layer: number, qScale: number): OnnxQkv {
    const b = this.b;
    const d = this.arch.dModel;
    const input = this.val(h);
    const joined = joinQkv(this.arch, values(w.proj.q_proj), values(w.proj.k_proj), values(w.proj.v_proj), d, qScale);
    let qkv = b.op1('MatMul', [input, b.floats(`layers.${layer}.qkv_proj`, joined, [d, 5 * d])]); // [B, S, 5d]
    const lora = this.lora;
    if (lora && QKV.some((p) => lora.targets.includes(p)))
      qkv = this.withLora(input, qkv, `${layer}.qkv`, d, 3 * lora.r, 5 * d);
    const [qk, qkR, v] = b.op('Split', [qkv, b.ints([2 * d, 2 * d, d])], { axis: -1 }, 3);
    const qkRot = b.op1('Add', [b.op1('Mul', [qk, this.inputs.cos]), b.op1('Mul', [qkR, this.inputs.sin])]); // [B, S, 2d]: q (scaled) and k, RoPE applied
    return { qk: qkRot, v };
  }

  attention({ qk: qkRot, v }: OnnxQkv, i: number): string {
    const b = this.b;
    const d = this.arch.dModel;
    const H = this.arch.nHeads;
    const dh = headDim(this.arch);
    const { bias, shapes } = this.inputs;
    /**
     * q kᵀ over the last two axes of rank-`rank` operands, keys [.., len, dh] as cached: Transpose + MatMul, which ORT's
     * CPU optimizer fuses into FusedMatMul with transB (no transposed copy), and which WebGPU runs (portable-ops.ts).
     */
    const scores = (q: string, k: string, rank: number) => matMulTransposed(b, q, k, { transB: true, rank });
    const promptK = b.input(`prompt_k.${i}`, 'float32', ['prompts', H, 'prompt_len', dh]);
    const promptV = b.input(`prompt_v.${i}`, 'float32', ['prompts', H, 'prompt_len', dh]);
    if (this.mode === 'decode') {
      const ownK = b.input(`own_k.${i}`, 'float32', ['prompts', H, 'group', 'own_len', dh]);
      const ownV = b.input(`own_v.${i}`, 'float32', ['prompts', H, 'group', 'own_len', dh]);
      // [B, 1, 3d] → [U, G, 3H, dh] → [U, 3H, G, dh] → q, k, v [U, H, G, dh]
      const joined = b.op1(
        'Transpose',
        [b.op1('Reshape', [b.op1('Concat', [qkRot, v], { axis: -1 }), shapes.ug3hdh])],
        { perm: [0, 2, 1, 3] },
      );
      const [q, k, vv] = b.op('Split', [joined], { axis: 1, num_outputs: 3 }, [`query.${i}`, `key.${i}`, `value.${i}`]);
      const rows5 = b.ints([0, 0, 0, 1, dh]);
      const flat4 = b.ints([0, 0, 0, -1]);
      const sPrompt = scores(q, promptK, 4); // [U, H, G, P]
      const sOwn = b.op1('Reshape', [scores(b.op1('Reshape', [q, rows5]), ownK, 5), flat4]); // [U, H, G, T]
      const sNew = b.op1('ReduceSum', [b.op1('Mul', [q, k]), b.ints([-1])], { keepdims: 1 }); // [U, H, G, 1]
      const probs = b.op1('Softmax', [b.op1('Add', [b.op1('Concat', [sPrompt, sOwn, sNew], { axis: -1 }), bias])], {
        axis: -1,
      });
      const [pPrompt, pOwn, pNew] = b.op('Split', [probs, shapes.splits], { axis: -1 }, 3);
      const fromOwn = b.op1('Reshape', [
        b.op1('MatMul', [b.op1('Reshape', [pOwn, b.ints([0, 0, 0, 1, -1])]), ownV]),
        flat4,
      ]); // [U, H, G, dh]
      const mixed = b.op1('Add', [
        b.op1('Add', [b.op1('MatMul', [pPrompt, promptV]), fromOwn]),
        b.op1('Mul', [pNew, vv]),
      ]); // [U, H, G, dh]
      b.output(`key.${i}`, 'float32', ['prompts', H, 'group', dh]);
      b.output(`value.${i}`, 'float32', ['prompts', H, 'group', dh]);
      return b.op1('Reshape', [b.op1('Transpose', [mixed], { perm: [0, 2, 1, 3] }), b.ints([-1, 1, d])]); // [B, 1, d]
    }
    const [q, kFlat] = b.op('Split', [qkRot], { axis: -1, num_outputs: 2 }, 2); // [B, S, d] each
    const k = b.op1(
      'Transpose',
      [b.op1('Reshape', [kFlat, b.ints([0, 0, H, dh])])],
      { perm: [0, 2, 1, 3] },
      `key.${i}`,
    ); // [B, H, S, dh]
    const vh = b.op1('Transpose', [b.op1('Reshape', [v, b.ints([0, 0, H, dh])])], { perm: [0, 2, 1, 3] }, `value.${i}`);
    // Each row's keys: its prompt's (repeated for the G rows) then this call's, [B, H, P + S, dh]; one fused
    // attention (com.microsoft MultiHeadAttention, q pre-scaled so scale 1) with the additive mask: the [S, P + S]
    // scores of one row and head are made, masked, normalised and used while still in cache.
    const rows = (cache: string) =>
      b.op1('Reshape', [b.op1('Expand', [b.op1('Unsqueeze', [cache, b.ints([1])]), shapes.ughPdh]), shapes.bhPdh]);
    const keys = b.op1('Concat', [rows(promptK), k], { axis: 2 });
    const vals = b.op1('Concat', [rows(promptV), vh], { axis: 2 });
    b.output(`key.${i}`, 'float32', ['batch', H, 'seq', dh]);
    b.output(`value.${i}`, 'float32', ['batch', H, 'seq', dh]);
    if (this.fusedAttention)
      return b.op1(
        'MultiHeadAttention',
        [q, keys, vals, '', '', bias],
        { num_heads: H, scale: { float: 1 } },
        undefined,
        MS_DOMAIN,
      ); // [B, S, d]
    // The same attention in plain ops (WebGPU: its MultiHeadAttention gives wrong rows when the keys outnumber the
    // queries, as a prompt cache makes them; builtinGraphs): softmax(q Kᵀ + bias) V per head.
    const qh = b.op1('Transpose', [b.op1('Reshape', [q, b.ints([0, 0, H, dh])])], { perm: [0, 2, 1, 3] }); // [B, H, S, dh]
    const probs = b.op1('Softmax', [b.op1('Add', [matMulTransposed(b, qh, keys, { transB: true, rank: 4 }), bias])], {
      axis: -1,
    }); // [B, H, S, P + S]
    const mixed = b.op1('MatMul', [probs, vals]); // [B, H, S, dh]
    return b.op1('Reshape', [b.op1('Transpose', [mixed], { perm: [0, 2, 1, 3] }), b.ints([0, 0, d])]); // [B, S, d]
  }
}

/**
 * The serialised model for `weights` (read once from the tfjs variables; LoRA adapters are inputs, not weights).
 * `fusedAttention` (default true): the general mode's attention is one com.microsoft MultiHeadAttention; false, the
 * same in plain ops.
 */
export function buildBuiltinGraph(
  arch: Architecture,
  weights: ModelWeights,
  lora: LoraSpec | null,
  mode: GraphMode,
  options: { fusedAttention?: boolean } = {},
): Uint8Array {
  const d = arch.dModel;
  const b = new GraphBuilder(`metrl-vlm-${mode}`);
  const ids = b.input('input_ids', 'int64', ['batch', 'seq']);
  const cos = b.input('rope_cos', 'float32', ['batch', 'seq', 2 * d]);
  const sin = b.input('rope_sin', 'float32', ['batch', 'seq', 2 * d]);
  let inputs: PassInputs;
  if (mode === 'decode') {
    const bias = b.input('attn_bias', 'float32', ['prompts', 1, 'group', 'keys']);
    const shapes = { ug3hdh: b.input('shape.u_g_3h_dh', 'int64', [4]), splits: b.input('score_splits', 'int64', [3]) }; // [P, T, 1]
    inputs = { ids, cos, sin, bias, patches: null, shapes };
  } else {
    // Image patches (prompts only reach the general graph): every distinct patch's pixels, its index in its image, and
    // per token 1 + the patch row it shows (0: none).
    const patches = {
      pixels: b.input('patch_pixels', 'float32', ['patches', patchDim(arch)]),
      slots: b.input('patch_slots', 'int64', ['patches']),
      index: b.input('patch_index', 'int64', ['batch', 'seq']),
    };
    const bias = b.input('attn_bias', 'float32', ['batch', 1, 'seq', 'keys']);
    // Shapes of the prompt caches repeated for each of their G rows (B = U·G): [U, 1, H, P, dh] expanded to
    // [U, G, H, P, dh], then read as [B, H, P, dh]; given by the caller.
    const shapes = {
      ughPdh: b.input('shape.u_g_h_p_dh', 'int64', [5]),
      bhPdh: b.input('shape.b_h_p_dh', 'int64', [4]),
    };
    inputs = { ids, cos, sin, bias, patches, shapes };
  }
  const ops = new OnnxBuiltinOps(b, arch, weights, lora, mode, inputs, options.fusedAttention ?? true);
  let x = embed(ops, weights);
  weights.layers.forEach((layer, i) => {
    x = block(ops, arch, layer, i, x);
  });
  head(ops, arch, weights, x); // the node named `logits`
  b.output('logits', 'float32', ['batch', 'seq', arch.vocabSize]);
  return b.toBytes(18);
}
