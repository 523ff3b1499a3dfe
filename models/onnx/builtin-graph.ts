// The built-in model's forward pass as an ONNX graph (models/ layer, ONNX Runtime engine), built from the same
// architecture config and the same weights as the tfjs forward (models/builtin/transformer.ts), which stays the
// reference it is tested against (tests/models/onnx-builtin.test.ts). Not yet generated from one shared op-level
// description (issue 17's "one definition, two executions"): the graph mirrors transformer.ts step by step, with the
// same RoPE rotation matrix, GELU approximation and LoRA product order, so the two agree to float rounding.
//
// One graph serves prefill, KV-cache decoding, scoring and the full forward. Its S new tokens per row attend to three
// kinds of keys, concatenated along the score axis (so the big caches are never concatenated or copied by ORT):
//   prompt  keys/values of a shared prompt, one per group of G rows (B = U·G): [U, H, dh, P] (keys transposed) and
//           [U, H, P, dh]; the G rows' queries are multiplied against them together, as the tfjs decode does
//   own     each row's own earlier keys/values (decoded tokens): [B, H, dh, T], [B, H, T, dh], with T a capacity the
//           caller fills as it goes (unfilled positions are masked)
//   new     this call's S keys/values, causally
// The caller gives the additive mask `attn_bias` [B, 1, S, P + T + S] (0 visible, -1e9 hidden), the RoPE tables
// (computed in TS from positions.ts positions, exactly as transformer.ts ropeTables), and the reshape targets of the
// grouped prompt product. Outputs: logits [B, S, V] and this call's keys (RoPE applied) and values per layer
// [B, H, S, dh], which the caller appends to its caches. Caches too short to matter (prefill has none) are given as
// one masked zero position, so no dimension is ever zero.
//
// q, k and v are one product with the three weights side by side (fewer, larger products: ORT's per-node cost is a
// large part of a decoding step for a model this small).
// LoRA: A [in, r] and B [r, out] of every adapted projection are graph inputs (`lora.<layer>.<proj>.a/b`; for q, k, v
// one pair, A's side by side [d, 3r] and B's block-diagonal [3r, 3d]), so an update never rebuilds the session: the
// sampler feeds the learner's current values each call (A pre-multiplied by alpha / r), and zeros for B give the
// reference policy (x A · 0 adds exact zeros). The merged alternative (W + scale·A B re-uploaded per rollout phase)
// would save the two small products per projection but needs the projection weights as inputs or a rebuilt session;
// at r = 16 the adapters are 0.28 M values per call against 2.2 M weights, so the inputs win on simplicity.
import type * as tf from '@tensorflow/tfjs';
import { headDim, patchDim, patchesPerImage, type Architecture, type LoraConfig } from '../builtin/config.ts';
import type { ModelWeights, Projection } from '../builtin/weights.ts';
import { GraphBuilder } from './graph-builder.ts';
import { rotationValues } from '../builtin/transformer.ts';

/** What the graph was built for: the architecture and, when LoRA inputs exist, which projections have them. */
export interface BuiltinGraphSpec {
  arch: Architecture;
  lora: { r: number; scale: number; targets: readonly Projection[] } | null;
}

/** The attention projections, computed as one product (and one LoRA pair) in the graph. */
export const QKV = ['q_proj', 'k_proj', 'v_proj'] as const satisfies readonly Projection[];

/**
 * Name of a LoRA input: `lora.<layer>.<proj>.a|b` for o/up/down, `lora.<layer>.qkv.a|b` for the joined attention
 * projections. A inputs hold scale · A (see BuiltinOrtModel.syncLora).
 */
export const loraInputName = (layer: number, projection: Projection | 'qkv', part: 'a' | 'b'): string => `lora.${layer}.${projection}.${part}`;

const values = (v: tf.Variable | tf.Tensor): Float32Array => v.dataSync() as Float32Array;


export function loraSpec(config: LoraConfig | null): BuiltinGraphSpec['lora'] {
  return config ? { r: config.r, scale: config.alpha / config.r, targets: config.targetModules } : null;
}

/** The serialised model for `weights` (read once from the tfjs variables; LoRA adapters are inputs, not weights). */
export function buildBuiltinGraph(spec: BuiltinGraphSpec, weights: ModelWeights): Uint8Array {
  const { arch } = spec;
  const d = arch.dModel;
  const H = arch.nHeads;
  const dh = headDim(arch);
  const V = arch.vocabSize;
  const b = new GraphBuilder('metrl-vlm');

  const ids = b.input('input_ids', 'int64', ['batch', 'seq']);
  const pixels = b.input('patch_pixels', 'float32', ['patches', patchDim(arch)]);
  const slots = b.input('patch_slots', 'int64', ['patches']);
  const patchIndex = b.input('patch_index', 'int64', ['batch', 'seq']);
  const cos = b.input('rope_cos', 'float32', ['batch', 'seq', d]);
  const sin = b.input('rope_sin', 'float32', ['batch', 'seq', d]);
  const bias = b.input('attn_bias', 'float32', ['batch', 1, 'seq', 'keys']);
  // Reshape targets of the grouped prompt products (U prompts, G rows each, B = U·G), given by the caller:
  // q [B, H, S, dh] → [U, G, H, S, dh] → (transposed) [U, H, G·S, dh]; scores [U, H, G·S, P] → [U, H, G, S, P] →
  // [B, H, S, P]; probabilities back the same way to [U, H, G·S, P]; their product [U, H, G·S, dh] → [B, H, S, dh].
  const shape = (name: string, rank: number) => b.input(`shape.${name}`, 'int64', [rank]);
  const [ugHSdh, uhGSdh, uhGSP, bhSP, ugHSP, uhGSp, uhGSdhOut, bhSdh] = [
    shape('u_g_h_s_dh', 5), shape('u_h_gs_dh', 4), shape('u_h_g_s_p', 5), shape('b_h_s_p', 4),
    shape('u_g_h_s_p', 5), shape('u_h_gs_p', 4), shape('u_h_g_s_dh', 5), shape('b_h_s_dh', 4),
  ];
  const splits = b.input('score_splits', 'int64', [3]); // [P, T, S]
  /** Reshape, swap axes 1 and 2 of the 5-D view, reshape. */
  const regroup = (t: string, first: string, second: string) => b.op1('Reshape', [b.op1('Transpose', [b.op1('Reshape', [t, first])], { perm: [0, 2, 1, 3, 4] }), second]);

  // Embeddings: tokens by gather (the one-hot product of transformer.ts selects the same rows), image patches projected
  // once per distinct patch and placed by a gather from [0; patches] (row 0 = no patch).
  let x = b.op1('Gather', [b.floats('embed', values(weights.embed), [V, d]), ids]);
  const projected = b.op1('Add', [
    b.op1('Add', [b.op1('MatMul', [b.op1('Sub', [pixels, b.scalar(0.5)]), b.floats('patch_proj', values(weights.patchProj), [patchDim(arch), d])]), b.floats('patch_bias', values(weights.patchBias), [d])]),
    b.op1('Gather', [b.floats('patch_pos', values(weights.patchPos), [patchesPerImage(arch), d]), slots]),
  ]); // [patches, d]
  const table = b.op1('Concat', [b.floats('no_patch', new Float32Array(d), [1, d]), projected], { axis: 0 }); // [1 + patches, d]
  x = b.op1('Add', [x, b.op1('Gather', [table, patchIndex])]); // [B, S, d]

  const rot = b.floats('rope_rotation', rotationValues(arch), [d, d]);
  const rope = (t: string) => b.op1('Add', [b.op1('Mul', [t, cos]), b.op1('Mul', [b.op1('MatMul', [t, rot]), sin])]);
  const heads = (t: string) => b.op1('Transpose', [b.op1('Reshape', [t, b.ints([0, 0, H, dh])])], { perm: [0, 2, 1, 3] }); // [B, S, d] → [B, H, S, dh]
  const qScale = b.scalar(1 / Math.sqrt(dh));
  /** x W (+ (x A') B with A' = scale · A, fed pre-scaled: transformer.ts linear's function, one node fewer). */
  const withLora = (input: string, base: string, name: string, inDim: number, rank: number, outDim: number): string => {
    const a = b.input(`lora.${name}.a`, 'float32', [inDim, rank]);
    const bb = b.input(`lora.${name}.b`, 'float32', [rank, outDim]);
    return b.op1('Add', [base, b.op1('MatMul', [b.op1('MatMul', [input, a]), bb])]);
  };
  const linear = (input: string, layer: number, p: Projection, w: tf.Variable): string => {
    const [inDim, outDim] = w.shape;
    const base = b.op1('MatMul', [input, b.floats(`layers.${layer}.${p}`, values(w), [inDim, outDim])]);
    if (!spec.lora || !spec.lora.targets.includes(p)) return base;
    return withLora(input, base, `${layer}.${p}`, inDim, spec.lora.r, outDim);
  };
  /** q, k and v in one product with W_qkv = [Wq | Wk | Wv] (and one LoRA pair: A's side by side, B's block-diagonal). */
  const qkv = (input: string, layer: number, proj: Record<Projection, tf.Variable>): string[] => {
    const joined = new Float32Array(d * 3 * d);
    (['q_proj', 'k_proj', 'v_proj'] as const).forEach((p, j) => {
      const w = values(proj[p]);
      for (let r = 0; r < d; r++) joined.set(w.subarray(r * d, (r + 1) * d), r * 3 * d + j * d);
    });
    let out = b.op1('MatMul', [input, b.floats(`layers.${layer}.qkv_proj`, joined, [d, 3 * d])]);
    if (spec.lora && QKV.some((p) => spec.lora!.targets.includes(p))) out = withLora(input, out, `${layer}.qkv`, d, 3 * spec.lora.r, 3 * d);
    return b.op('Split', [out], { axis: -1 }, 3); // [B, S, d] each
  };
  const norm = (t: string, gain: tf.Variable, name: string) =>
    b.op1('SimplifiedLayerNormalization', [t, b.floats(name, values(gain), [d])], { axis: -1, epsilon: { float: arch.normEps } });

  weights.layers.forEach((layer, i) => {
    const promptKT = b.input(`prompt_kT.${i}`, 'float32', ['prompts', H, dh, 'prompt_len']);
    const promptV = b.input(`prompt_v.${i}`, 'float32', ['prompts', H, 'prompt_len', dh]);
    const ownKT = b.input(`own_kT.${i}`, 'float32', ['batch', H, dh, 'own_len']);
    const ownV = b.input(`own_v.${i}`, 'float32', ['batch', H, 'own_len', dh]);

    const h = norm(x, layer.attnNorm, `layers.${i}.attn_norm`);
    const [qLin, kLin, vLin] = qkv(h, i, layer.proj);
    const q = heads(b.op1('Mul', [rope(qLin), qScale])); // [B, H, S, dh]
    const k = b.op1('Identity', [heads(rope(kLin))], {}, `key.${i}`);
    const v = b.op1('Identity', [heads(vLin)], {}, `value.${i}`);

    // Prompt part: the G rows of a prompt together, [U, H, G·S, dh] × [U, H, dh, P].
    const sPrompt = regroup(b.op1('MatMul', [regroup(q, ugHSdh, uhGSdh), promptKT]), uhGSP, bhSP); // [B, H, S, P]
    const sOwn = b.op1('MatMul', [q, ownKT]); // [B, H, S, T]
    const sNew = b.op1('MatMul', [q, b.op1('Transpose', [k], { perm: [0, 1, 3, 2] })]); // [B, H, S, S]
    const probs = b.op1('Softmax', [b.op1('Add', [b.op1('Concat', [sPrompt, sOwn, sNew], { axis: -1 }), bias])], { axis: -1 });
    const [pPrompt, pOwn, pNew] = b.op('Split', [probs, splits], { axis: -1 }, 3);
    const fromPrompt = regroup(b.op1('MatMul', [regroup(pPrompt, ugHSP, uhGSp), promptV]), uhGSdhOut, bhSdh); // [B, H, S, dh]
    const mixed = b.op1('Add', [b.op1('Add', [fromPrompt, b.op1('MatMul', [pOwn, ownV])]), b.op1('MatMul', [pNew, v])]); // [B, H, S, dh]
    const attended = b.op1('Reshape', [b.op1('Transpose', [mixed], { perm: [0, 2, 1, 3] }), b.ints([0, 0, d])]); // [B, S, d]
    const mid = b.op1('Add', [x, linear(attended, i, 'o_proj', layer.proj.o_proj)]);
    const up = linear(norm(mid, layer.mlpNorm, `layers.${i}.mlp_norm`), i, 'up_proj', layer.proj.up_proj);
    const act = b.op1('Mul', [up, b.op1('Sigmoid', [b.op1('Mul', [up, b.scalar(1.702)])])]); // GELU, sigmoid approximation
    x = b.op1('Add', [mid, linear(act, i, 'down_proj', layer.proj.down_proj)]);
    b.output(`key.${i}`, 'float32', ['batch', H, 'seq', dh]);
    b.output(`value.${i}`, 'float32', ['batch', H, 'seq', dh]);
  });
  b.op1('MatMul', [norm(x, weights.finalNorm, 'final_norm'), b.floats('lm_head', values(weights.lmHead), [d, V])], {}, 'logits');
  b.output('logits', 'float32', ['batch', 'seq', V]);
  return b.toBytes();
}

