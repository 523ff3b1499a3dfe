// The built-in model's forward pass as ONNX graphs (models/ layer, ONNX Runtime engine), built from the same
// architecture config and the same weights as the tfjs forward (models/builtin/transformer.ts), which stays the
// reference it is tested against (tests/models/onnx-builtin.test.ts). Not yet generated from one shared op-level
// description (issue 17's "one definition, two executions"): the graphs mirror transformer.ts step by step, with the
// same RoPE rotation, GELU approximation and LoRA product order, so the two agree to float rounding.
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
// against a causal mask. Keys stay [.., len, dh] as computed: scores are com.microsoft FusedMatMul with transB
// (measured faster than MatMul against keys stored transposed, and no transposing copy). Mask `attn_bias`
// [U, 1, G, P + T + 1]; outputs: logits [B, 1, V] (rows u·G + g) and keys/values per layer [U, H, G, dh].
//
// Both: RoPE is folded into the q/k weights. rope(x W) = (x W)·cos + (x W R)·sin with R the per-head rotate-half
// matrix (transformer.ts rotationValues, a signed permutation, so W R is exact), so one product gives
// [q | k | q R | k R | v] = x [Wq·s | Wk | Wq R·s | Wk R | Wv] (s = 1/√dh, the query scale) and RoPE is two Muls and an
// Add on [B, S, 2d] with the tables [cos | cos], [sin | sin] (ropeValues, fed by the caller). Residual adds are fused
// into the next norm (com.microsoft SkipSimplifiedLayerNormalization); ORT fuses the sigmoid GELU into QuickGelu.
// The base weights are initializers, which ORT prepacks for its GEMM (fed as inputs instead, the same products ran 2×
// slower: measured, see README). LoRA: A [in, r] and B [r, out] of every adapted projection are graph inputs
// (`lora.<layer>.<proj>.a/b`; for q, k, v one pair, A' = scale·[Aq | Ak | Av] [d, 3r] and B' [3r, 5d] laid out as the
// joined weight: rows of Aq → [Bq·s | 0 | Bq R·s | 0 | 0], of Ak → [0 | Bk | 0 | Bk R | 0], of Av → [0 | 0 | 0 | 0 | Bv]),
// so an update never rebuilds a session: the caller feeds the learner's current values (A pre-multiplied by alpha / r).
// A graph built without LoRA serves the reference policy (no zero-B products).
import { headDim, patchDim, patchesPerImage, type Architecture } from '../builtin/config.ts';
import type { ModelWeights, Projection } from '../builtin/weights.ts';
import type { LoraConfig } from '../builtin/config.ts';
import { GraphBuilder, MS_DOMAIN } from './graph-builder.ts';
import { rotationValues } from '../builtin/rope.ts';

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
export const loraInputName = (layer: number, projection: Projection | 'qkv', part: 'a' | 'b'): string => `lora.${layer}.${projection}.${part}`;

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

/** Columns [q·s | k | q R·s | k R | v] of the joined q/k/v weight from q, k, v blocks [rows, d] (see the header). */
export function joinQkv(arch: Architecture, q: Float32Array, k: Float32Array, v: Float32Array, rows: number): Float32Array {
  const d = arch.dModel;
  const s = 1 / Math.sqrt(headDim(arch));
  const rot = rotationValues(arch);
  const qs = Float32Array.from(q, (x) => x * s);
  const blocks = [qs, k, matmul(qs, rot, rows, d, d), matmul(k, rot, rows, d, d), v];
  const joined = new Float32Array(rows * 5 * d);
  blocks.forEach((w, j) => {
    for (let r = 0; r < rows; r++) joined.set(w.subarray(r * d, (r + 1) * d), r * 5 * d + j * d);
  });
  return joined;
}

const values = (v: { dataSync(): unknown }): Float32Array => v.dataSync() as Float32Array;

/** The serialised model for `weights` (read once from the tfjs variables; LoRA adapters are inputs, not weights). */
export function buildBuiltinGraph(arch: Architecture, weights: ModelWeights, lora: LoraSpec | null, mode: GraphMode): Uint8Array {
  const d = arch.dModel;
  const H = arch.nHeads;
  const dh = headDim(arch);
  const V = arch.vocabSize;
  const decode = mode === 'decode';
  const b = new GraphBuilder(`metrl-vlm-${mode}`);

  const ids = b.input('input_ids', 'int64', ['batch', 'seq']);
  const cos = b.input('rope_cos', 'float32', ['batch', 'seq', 2 * d]);
  const sin = b.input('rope_sin', 'float32', ['batch', 'seq', 2 * d]);
  let x = b.op1('Gather', [b.floats('embed', values(weights.embed), [V, d]), ids]); // [B, S, d]
  let bias: string;
  let shapes: Record<string, string> = {};
  if (decode) {
    bias = b.input('attn_bias', 'float32', ['prompts', 1, 'group', 'keys']);
    shapes = { ug3hdh: b.input('shape.u_g_3h_dh', 'int64', [4]), splits: b.input('score_splits', 'int64', [3]) }; // [P, T, 1]
  } else {
    // Image patches (prompts only reach the general graph): projected once per distinct patch and placed by a gather
    // from [0; patches] (row 0 = no patch).
    const pixels = b.input('patch_pixels', 'float32', ['patches', patchDim(arch)]);
    const slots = b.input('patch_slots', 'int64', ['patches']);
    const patchIndex = b.input('patch_index', 'int64', ['batch', 'seq']);
    bias = b.input('attn_bias', 'float32', ['batch', 1, 'seq', 'keys']);
    const projected = b.op1('Add', [
      b.op1('Add', [b.op1('MatMul', [b.op1('Sub', [pixels, b.scalar(0.5)]), b.floats('patch_proj', values(weights.patchProj), [patchDim(arch), d])]), b.floats('patch_bias', values(weights.patchBias), [d])]),
      b.op1('Gather', [b.floats('patch_pos', values(weights.patchPos), [patchesPerImage(arch), d]), slots]),
    ]); // [patches, d]
    const table = b.op1('Concat', [b.floats('no_patch', new Float32Array(d), [1, d]), projected], { axis: 0 }); // [1 + patches, d]
    x = b.op1('Add', [x, b.op1('Gather', [table, patchIndex])]); // [B, S, d]
    // Shapes of the prompt caches repeated for each of their G rows (B = U·G): [U, 1, H, P, dh] expanded to
    // [U, G, H, P, dh], then read as [B, H, P, dh]; given by the caller.
    shapes = { ughPdh: b.input('shape.u_g_h_p_dh', 'int64', [5]), bhPdh: b.input('shape.b_h_p_dh', 'int64', [4]) };
  }

  const eps = { float: arch.normEps };
  /** norm(a + r) and a + r in one node (r = '' : a plain norm, the sum is a). */
  const addNorm = (a: string, r: string, gain: { dataSync(): unknown }, name: string): [string, string] => {
    const g = b.floats(name, values(gain), [d]);
    if (!r) return [b.op1('SimplifiedLayerNormalization', [a, g], { axis: -1, epsilon: eps }), a];
    const [normed, , , sum] = b.op('SkipSimplifiedLayerNormalization', [a, r, g], { epsilon: eps }, 4, MS_DOMAIN);
    return [normed, sum];
  };
  /** q kᵀ over the last two axes, keys [.., len, dh] as cached (com.microsoft FusedMatMul: no transposed copy). */
  const scores = (q: string, k: string) => b.op1('FusedMatMul', [q, k], { transB: 1, alpha: { float: 1 } }, undefined, MS_DOMAIN);

  /** x W (+ (x A') B with A' = scale · A, fed pre-scaled: transformer.ts linear's function, one node fewer). */
  const withLora = (input: string, base: string, name: string, inDim: number, rank: number, outDim: number): string => {
    const a = b.input(`lora.${name}.a`, 'float32', [inDim, rank]);
    const bb = b.input(`lora.${name}.b`, 'float32', [rank, outDim]);
    return b.op1('Add', [base, b.op1('MatMul', [b.op1('MatMul', [input, a]), bb])]);
  };
  const linear = (input: string, layer: number, p: Projection, w: { shape: number[]; dataSync(): unknown }): string => {
    const [inDim, outDim] = w.shape;
    const base = b.op1('MatMul', [input, b.floats(`layers.${layer}.${p}`, values(w), [inDim, outDim])]);
    if (!lora || !lora.targets.includes(p)) return base;
    return withLora(input, base, `${layer}.${p}`, inDim, lora.r, outDim);
  };

  let residual = ''; // the branch output still to be added to x (fused into the next norm)
  weights.layers.forEach((layer, i) => {
    const [h, xi] = addNorm(x, residual, layer.attnNorm, `layers.${i}.attn_norm`);
    x = xi;
    const joined = joinQkv(arch, values(layer.proj.q_proj), values(layer.proj.k_proj), values(layer.proj.v_proj), d);
    let qkv = b.op1('MatMul', [h, b.floats(`layers.${i}.qkv_proj`, joined, [d, 5 * d])]); // [B, S, 5d]
    if (lora && QKV.some((p) => lora.targets.includes(p))) qkv = withLora(h, qkv, `${i}.qkv`, d, 3 * lora.r, 5 * d);
    const [qk, qkR, v] = b.op('Split', [qkv, b.ints([2 * d, 2 * d, d])], { axis: -1 }, 3);
    const qkRot = b.op1('Add', [b.op1('Mul', [qk, cos]), b.op1('Mul', [qkR, sin])]); // [B, S, 2d]: q (scaled) and k, RoPE applied
    let attended: string;
    if (decode) {
      const promptK = b.input(`prompt_k.${i}`, 'float32', ['prompts', H, 'prompt_len', dh]);
      const promptV = b.input(`prompt_v.${i}`, 'float32', ['prompts', H, 'prompt_len', dh]);
      const ownK = b.input(`own_k.${i}`, 'float32', ['prompts', H, 'group', 'own_len', dh]);
      const ownV = b.input(`own_v.${i}`, 'float32', ['prompts', H, 'group', 'own_len', dh]);
      // [B, 1, 3d] → [U, G, 3H, dh] → [U, 3H, G, dh] → q, k, v [U, H, G, dh]
      const joined = b.op1('Transpose', [b.op1('Reshape', [b.op1('Concat', [qkRot, v], { axis: -1 }), shapes.ug3hdh])], { perm: [0, 2, 1, 3] });
      const [q, k, vv] = b.op('Split', [joined], { axis: 1, num_outputs: 3 }, [`query.${i}`, `key.${i}`, `value.${i}`]);
      const rows5 = b.ints([0, 0, 0, 1, dh]);
      const flat4 = b.ints([0, 0, 0, -1]);
      const sPrompt = scores(q, promptK); // [U, H, G, P]
      const sOwn = b.op1('Reshape', [scores(b.op1('Reshape', [q, rows5]), ownK), flat4]); // [U, H, G, T]
      const sNew = b.op1('ReduceSum', [b.op1('Mul', [q, k]), b.ints([-1])], { keepdims: 1 }); // [U, H, G, 1]
      const probs = b.op1('Softmax', [b.op1('Add', [b.op1('Concat', [sPrompt, sOwn, sNew], { axis: -1 }), bias])], { axis: -1 });
      const [pPrompt, pOwn, pNew] = b.op('Split', [probs, shapes.splits], { axis: -1 }, 3);
      const fromOwn = b.op1('Reshape', [b.op1('MatMul', [b.op1('Reshape', [pOwn, b.ints([0, 0, 0, 1, -1])]), ownV]), flat4]); // [U, H, G, dh]
      const mixed = b.op1('Add', [b.op1('Add', [b.op1('MatMul', [pPrompt, promptV]), fromOwn]), b.op1('Mul', [pNew, vv])]); // [U, H, G, dh]
      attended = b.op1('Reshape', [b.op1('Transpose', [mixed], { perm: [0, 2, 1, 3] }), b.ints([-1, 1, d])]); // [B, 1, d]
      b.output(`key.${i}`, 'float32', ['prompts', H, 'group', dh]);
      b.output(`value.${i}`, 'float32', ['prompts', H, 'group', dh]);
    } else {
      const promptK = b.input(`prompt_k.${i}`, 'float32', ['prompts', H, 'prompt_len', dh]);
      const promptV = b.input(`prompt_v.${i}`, 'float32', ['prompts', H, 'prompt_len', dh]);
      const [q, kFlat] = b.op('Split', [qkRot], { axis: -1, num_outputs: 2 }, 2); // [B, S, d] each
      const k = b.op1('Transpose', [b.op1('Reshape', [kFlat, b.ints([0, 0, H, dh])])], { perm: [0, 2, 1, 3] }, `key.${i}`); // [B, H, S, dh]
      const vh = b.op1('Transpose', [b.op1('Reshape', [v, b.ints([0, 0, H, dh])])], { perm: [0, 2, 1, 3] }, `value.${i}`);
      // Each row's keys: its prompt's (repeated for the G rows) then this call's, [B, H, P + S, dh]; one fused
      // attention (com.microsoft MultiHeadAttention, q pre-scaled so scale 1) with the additive mask: the [S, P + S]
      // scores of one row and head are made, masked, normalised and used while still in cache.
      const rows = (cache: string) => b.op1('Reshape', [b.op1('Expand', [b.op1('Unsqueeze', [cache, b.ints([1])]), shapes.ughPdh]), shapes.bhPdh]);
      const keys = b.op1('Concat', [rows(promptK), k], { axis: 2 });
      const vals = b.op1('Concat', [rows(promptV), vh], { axis: 2 });
      attended = b.op1('MultiHeadAttention', [q, keys, vals, '', '', bias], { num_heads: H, scale: { float: 1 } }, undefined, MS_DOMAIN); // [B, S, d]
      b.output(`key.${i}`, 'float32', ['batch', H, 'seq', dh]);
      b.output(`value.${i}`, 'float32', ['batch', H, 'seq', dh]);
    }
    const [h2, mid] = addNorm(x, linear(attended, i, 'o_proj', layer.proj.o_proj), layer.mlpNorm, `layers.${i}.mlp_norm`);
    x = mid;
    const up = linear(h2, i, 'up_proj', layer.proj.up_proj);
    const act = b.op1('Mul', [up, b.op1('Sigmoid', [b.op1('Mul', [up, b.scalar(1.702)])])]); // GELU, sigmoid approximation
    residual = linear(act, i, 'down_proj', layer.proj.down_proj);
  });
  const [final] = addNorm(x, residual, weights.finalNorm, 'final_norm');
  b.op1('MatMul', [final, b.floats('lm_head', values(weights.lmHead), [d, V])], {}, 'logits');
  b.output('logits', 'float32', ['batch', 'seq', V]);
  return b.toBytes(18);
}
