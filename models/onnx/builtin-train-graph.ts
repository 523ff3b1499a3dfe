// The built-in model's LoRA gradients as one ONNX graph (models/ layer, ONNX Runtime engine): the forward pass of one
// prompt group (a prompt and its G completions) written once with the differentiating builder (autodiff.ts), which
// appends the backward pass. The tfjs forward (models/builtin/transformer.ts, scoring.ts) stays the reference: same
// RoPE tables and rotation, RMSNorm, GELU approximation and LoRA product order ((x A) · scale) B; the gradients are
// tested against tfjs autodiff and finite differences (tests/models/onnx-learner.test.ts).
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
//               its queries in two blocks (the first half's scores stop at its own last key: [G, H, C₀, P + C₀])
// The prompt's keys and values are computed once for the group and receive the gradient of all G completions, as in
// scoring.ts. Embeddings, image patches and base weights are constants: no gradient nodes for them.
import { headDim, patchDim, patchesPerImage, type Architecture } from '../builtin/config.ts';
import type { ModelWeights, Projection } from '../builtin/weights.ts';
import { DiffGraph, type Value } from './autodiff.ts';
import { QKV, type BuiltinGraphSpec } from './builtin-graph.ts';
import type * as tf from '@tensorflow/tfjs';

/** Name of a LoRA param input (raw A [in, r] and B [r, out], as the tfjs variables hold them). */
export const trainLoraName = (layer: number, projection: Projection, part: 'a' | 'b'): string => `lora.${layer}.${projection}.${part}`;
/**
 * How many blocks the completions' queries attend in (the learner lays completions out with at least this many rows).
 * Measured on the chess learner pass at one thread (4 groups × 8 × 376 tokens, CPU seconds, medians of 6 interleaved
 * in one process at load 10-12): one run per learner chunk and group with one block (main before) 5.36; one run per
 * group with 2 blocks 4.55, 4 blocks 4.11, 6 blocks 4.53.
 */
export const QUERY_BLOCKS = 4;
/** Name of the gradient output of a LoRA param. */
export const gradName = (param: string): string => `grad.${param}`;

const values = (v: tf.Variable | tf.Tensor): Float32Array => v.dataSync() as Float32Array;

/**
 * The serialised training graph for `weights` with LoRA params per spec.lora (required). `gradients: false` gives the
 * same forward pass alone (log_probs only, no target_weights input): the learner's scoring pass, so the log-probs the
 * loss sees come from the very forward the gradients differentiate.
 */
export function buildBuiltinTrainGraph(spec: BuiltinGraphSpec, weights: ModelWeights, options: { gradients?: boolean } = {}): Uint8Array {
  const withGradients = options.gradients ?? true;
  const { arch } = spec;
  const lora = spec.lora;
  if (!lora) throw new Error('the training graph needs LoRA settings (it differentiates the adapters)');
  const d = arch.dModel;
  const H = arch.nHeads;
  const dh = headDim(arch);
  const V = arch.vocabSize;
  const g = new DiffGraph('metrl-vlm-train');
  const b = g.b;
  const C = (name: string, rank: number) => g.constant(name, rank);

  const ids = b.input('input_ids', 'int64', ['rows']);
  const pixels = b.input('patch_pixels', 'float32', ['patches', patchDim(arch)]);
  const slots = b.input('patch_slots', 'int64', ['patches']);
  const patchIndex = b.input('patch_index', 'int64', ['rows']);
  const cos = b.input('rope_cos', 'float32', ['rows', d]);
  const sin = b.input('rope_sin', 'float32', ['rows', d]);
  const promptMask = b.input('prompt_mask', 'float32', ['prompt', 'prompt']); // additive, causal
  // The completions' queries in QUERY_BLOCKS blocks of about C / n rows: block i sees the prompt and its own keys up to
  // its last row only, so its scores are [.., Cᵢ, P + C₀ + … + Cᵢ] instead of [.., Cᵢ, P + C]: of the causal [C, C]
  // part, whose upper half is masked, (n − 1) / 2n is not computed (4 blocks: 23% of the attention entries at chess's
  // sizes). Additive masks per block; block i < n − 1 takes its keys as the first part of key_splits.i.
  const blockMasks = Array.from({ length: QUERY_BLOCKS }, (_, i) => b.input(`completion_mask.${i}`, 'float32', [`block${i}`, `keys${i}`])); // [Cᵢ, P + C₀ + … + Cᵢ]
  const querySplits = b.input('query_splits', 'int64', [QUERY_BLOCKS]); // [C₀, …, Cₙ₋₁]
  const keySplits = Array.from({ length: QUERY_BLOCKS - 1 }, (_, i) => b.input(`key_splits.${i}`, 'int64', [2])); // [P + C₀ + … + Cᵢ, rest]
  const rowSplits = b.input('row_splits', 'int64', [2]); // [P, G·C]
  const scoreSplits = b.input('score_splits', 'int64', [2]); // [P, C]
  const gChd = b.input('shape.g_c_h_dh', 'int64', [4]); // [G, C, H, dh]
  const g111 = b.input('shape.g_1_1_1', 'int64', [4]); // [G, 1, 1, 1]: the prompt's keys broadcast to G completions
  const invT = b.input('inv_temperature', 'float32', []);

  // Embeddings (constants): tokens by gather, image patches projected once per distinct patch and placed by a gather
  // from [0; patches] (row 0 = no patch), as builtin-graph.ts does.
  const embedded = b.op1('Gather', [b.floats('embed', values(weights.embed), [V, d]), ids]);
  const projected = b.op1('Add', [
    b.op1('Add', [b.op1('MatMul', [b.op1('Sub', [pixels, b.scalar(0.5)]), b.floats('patch_proj', values(weights.patchProj), [patchDim(arch), d])]), b.floats('patch_bias', values(weights.patchBias), [d])]),
    b.op1('Gather', [b.floats('patch_pos', values(weights.patchPos), [patchesPerImage(arch), d]), slots]),
  ]);
  const table = b.op1('Concat', [b.floats('no_patch', new Float32Array(d), [1, d]), projected], { axis: 0 });
  let x: Value = C(b.op1('Add', [embedded, b.op1('Gather', [table, patchIndex])]), 2); // [N, d]

  // RoPE's rotate_half as swapped half-head blocks (autodiff.ts rope): views [N·H, 2, dh/2] and back [N, d], and
  // sin with rotate_half's signs folded in (−1 on each head's first half), once for all layers.
  const rot = { halves: b.ints([-1, 2, dh / 2]), rows: b.ints([-1, d]), swap: b.ints([1, 0]) };
  const signs = new Float32Array(d);
  for (let i = 0; i < d; i++) signs[i] = i % dh < dh / 2 ? -1 : 1;
  const signedSin = b.op1('Mul', [sin, b.floats('rope_signs', signs, [d])]);
  const qScale = b.scalar(1 / Math.sqrt(dh));
  const loraScale = b.scalar(lora.scale);
  const params: Value[] = [];
  const paramDims = new Map<string, number[]>();
  /** base (+ ((input A) · scale) B when p is a target): transformer.ts linear's order. */
  const withLora = (input: Value, base: Value, layer: number, p: Projection, inDim: number, outDim: number): Value => {
    if (!lora.targets.includes(p)) return base;
    const a = g.param(trainLoraName(layer, p, 'a'), [inDim, lora.r]);
    const bb = g.param(trainLoraName(layer, p, 'b'), [lora.r, outDim]);
    params.push(a, bb);
    paramDims.set(a.name, [inDim, lora.r]);
    paramDims.set(bb.name, [lora.r, outDim]);
    return g.add(base, g.matmul(g.mulConst(g.matmul(input, a), loraScale), bb));
  };
  /**
   * The adapters of q, k and v: their A's side by side in one product (x [A_q | A_k | A_v], [N, 3r] for the targets
   * among them), then each part times its own B.
   */
  const qkvLora = (input: Value, bases: Value[], layer: number): Value[] => {
    const targets = QKV.map((p, j) => ({ p, j })).filter(({ p }) => lora.targets.includes(p));
    if (targets.length === 0) return bases;
    const as = targets.map(({ p }) => {
      const a = g.param(trainLoraName(layer, p, 'a'), [d, lora.r]);
      paramDims.set(a.name, [d, lora.r]);
      return a;
    });
    const ranks = b.ints(targets.map(() => lora.r));
    const low = g.mulConst(g.matmul(input, as.length === 1 ? as[0] : g.concat(as, 1, ranks)), loraScale); // [N, t·r]
    const parts = as.length === 1 ? [low] : g.split(low, 1, ranks, as.length);
    const out = [...bases];
    targets.forEach(({ p, j }, t) => {
      const bb = g.param(trainLoraName(layer, p, 'b'), [lora.r, d]);
      paramDims.set(bb.name, [lora.r, d]);
      params.push(as[t], bb);
      out[j] = g.add(bases[j], g.matmul(parts[t], bb));
    });
    return out;
  };
  const linear = (input: Value, layer: number, p: Projection, w: tf.Variable): Value => {
    const [inDim, outDim] = w.shape;
    return withLora(input, g.matmul(input, C(b.floats(`layers.${layer}.${p}`, values(w), [inDim, outDim]), 2)), layer, p, inDim, outDim);
  };
  const rowsToHeads = b.ints([-1, H, dh]);
  const headsToRows = b.ints([-1, d]);
  const oneHPdh = b.ints([1, H, -1, dh]);
  const thirds = b.ints([d, d, d]);

  weights.layers.forEach((layer, i) => {
    const h = g.rmsNorm(x, b.floats(`layers.${i}.attn_norm`, values(layer.attnNorm), [d]), arch.normEps);
    // q, k, v: one base product with W_qkv = [Wq | Wk | Wv], split, each with its own adapter.
    const joined = new Float32Array(d * 3 * d);
    (['q_proj', 'k_proj', 'v_proj'] as const).forEach((p, j) => {
      const w = values(layer.proj[p]);
      for (let r = 0; r < d; r++) joined.set(w.subarray(r * d, (r + 1) * d), r * 3 * d + j * d);
    });
    const bases = g.split(g.matmul(h, C(b.floats(`layers.${i}.qkv_proj`, joined, [d, 3 * d]), 2)), 1, thirds, 3);
    const [qLin, kLin, vLin] = qkvLora(h, bases, i);
    const q = g.mulConst(g.rope(qLin, cos, signedSin, rot), qScale); // [N, d]
    const k = g.rope(kLin, cos, signedSin, rot);
    const v = vLin;
    const [qp, qc] = g.split(q, 0, rowSplits, 2); // [P, d], [G·C, d]
    const [kp, kc] = g.split(k, 0, rowSplits, 2);
    const [vp, vc] = g.split(v, 0, rowSplits, 2);
    const promptHeads = (t: Value) => g.transpose(g.reshape(t, rowsToHeads, 3), [1, 0, 2]); // [P, d] → [H, P, dh]
    const completionHeads = (t: Value) => g.transpose(g.reshape(t, gChd, 4), [0, 2, 1, 3]); // [G·C, d] → [G, H, C, dh]
    const kpH = promptHeads(kp);
    const vpH = promptHeads(vp);

    // Prompt: causal self-attention.
    const promptOut = g.reshape(g.transpose(g.attention(promptHeads(qp), kpH, vpH, promptMask), [1, 0, 2]), headsToRows, 2); // [P, d]

    // Completions: each attends to the prompt's keys and, causally, to its own: the prompt's keys and values are
    // broadcast to the G completions and put in front of theirs ([G, H, P + C, dh]), so one product gives the scores
    // and one the mixture (the score matrix, the largest tensor here, is never concatenated, split or transposed).
    const keysOf = (prompt: Value, own: Value) => g.concat([g.expand(g.reshape(prompt, oneHPdh, 4), g111, [0]), completionHeads(own)], 2, scoreSplits);
    const [keys, vals] = [keysOf(kpH, kc), keysOf(vpH, vc)]; // [G, H, P + C, dh]
    const blocks = g.split(completionHeads(qc), 2, querySplits, QUERY_BLOCKS); // [G, H, Cᵢ, dh]
    // Block i: scores [G, H, Cᵢ, P + C₀ + … + Cᵢ], its keys and values the first rows of the group's → [G, H, C, dh].
    const upTo = (t: Value, i: number) => (i === QUERY_BLOCKS - 1 ? t : g.split(t, 2, keySplits[i], 2)[0]);
    const mixed = g.concat(blocks.map((q, i) => g.attention(q, upTo(keys, i), upTo(vals, i), blockMasks[i])), 2, querySplits);
    const completionOut = g.reshape(g.transpose(mixed, [0, 2, 1, 3]), headsToRows, 2); // [G·C, d]

    const attended = g.concat([promptOut, completionOut], 0, rowSplits); // [N, d]
    const mid = g.add(x, linear(attended, i, 'o_proj', layer.proj.o_proj));
    const up = linear(g.rmsNorm(mid, b.floats(`layers.${i}.mlp_norm`, values(layer.mlpNorm), [d]), arch.normEps), i, 'up_proj', layer.proj.up_proj);
    x = g.add(mid, linear(g.gelu(up), i, 'down_proj', layer.proj.down_proj));
  });
  const z = g.mulConst(g.matmul(g.rmsNorm(x, b.floats('final_norm', values(weights.finalNorm), [d]), arch.normEps), C(b.floats('lm_head', values(weights.lmHead), [d, V]), 2)), invT);
  b.op1('LogSoftmax', [z.name], { axis: -1 }, 'log_probs');
  b.output('log_probs', 'float32', ['rows', V]);
  if (!withGradients) return b.toBytes();
  // d/dz of Σ W ⊙ log_softmax(z) = W − softmax(z) · Σ_v W.
  const targetWeights = b.input('target_weights', 'float32', ['rows', V]);
  const dz = b.op1('Sub', [targetWeights, b.op1('Mul', [b.op1('Softmax', [z.name], { axis: -1 }), b.op1('ReduceSum', [targetWeights, b.ints([-1])], { keepdims: 1 })])]);
  const grads = g.backward(new Map([[z.name, dz]]), params);
  for (const p of params) {
    const grad = grads.get(p.name);
    if (!grad) throw new Error(`no gradient reaches ${p.name}`);
    b.op1('Identity', [grad], {}, gradName(p.name));
    b.output(gradName(p.name), 'float32', paramDims.get(p.name)!);
  }
  return b.toBytes();
}
