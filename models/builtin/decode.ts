// One decoding step for many sequences at once: U prompts, G completions each, one new token per completion. After
// the prompts' prefill (models/builtin/transformer.ts forward), their keys and values are stacked head by head and padded to
// the longest prompt, so every step's attention is a fixed handful of batched products whatever U is: evaluation
// decodes 64 prompts together, and a per-prompt loop of small products cost far more in call overhead than in
// arithmetic there. Decoding needs no gradient; LoRA, if any, is already folded into the weights (models/builtin/lora.ts).
// The step is the model's one definition (models/builtin/model-ops.ts) executed by tfjs with this attention.
import * as tf from '@tensorflow/tfjs';
import { headDim, type Architecture } from './config.ts';
import { block, embed, head } from './model-ops.ts';
import {
  NEG,
  ropeTables,
  TfjsRowOps,
  type ForwardResult,
  type PassRows,
  type TfjsQkv,
  type TransformerModel,
} from './transformer.ts';

export interface DecodeState {
  prompts: number;
  group: number;
  /** Longest prompt; shorter ones are padded and masked. */
  prefixLength: number;
  /** Per layer: prompt keys [U·H, dh, Pmax] (or [U·H, Pmax, dh] when G = 1, see decodeStep) and values [U·H, Pmax, dh]. */
  prefixKT: tf.Tensor3D[];
  prefixV: tf.Tensor3D[];
  /** [U, 1, 1, Pmax]: 0 on real prompt positions, -1e9 on padding. */
  prefixMask: tf.Tensor4D;
  /** Per layer: each completion's own keys and values so far, [U·G·H, t, dh]; null before the first step. */
  ownK: tf.Tensor3D[] | null;
  ownV: tf.Tensor3D[] | null;
}

/**
 * One prefill's prompt keys and values, per layer, as [prompts, P, d] padded with zeros to P (the longest prompt of
 * the whole decode). Padding is a concat with zeros: WASM's Pad and Slice kernels cost time in proportion to their
 * input, so callers prefill a few prompts at a time and slice small tensors.
 */
export function stackPrompts(
  prefill: ForwardResult,
  starts: number[],
  lengths: number[],
  P: number,
): { k: tf.Tensor3D[]; v: tf.Tensor3D[] } {
  const stack = (rows: tf.Tensor2D) =>
    tf.stack(
      starts.map((start, u) => {
        const piece = tf.slice(rows, [start, 0], [lengths[u], -1]);
        return lengths[u] === P ? piece : tf.concat([piece, tf.zeros([P - lengths[u], rows.shape[1]])], 0);
      }),
    ) as tf.Tensor3D;
  return { k: prefill.keys.map(stack), v: prefill.values.map(stack) };
}

/** The decoding state from every prompt's stacked keys/values (per layer [U, P, d], prompts in order). */
export function decodeState(
  model: TransformerModel,
  keys: tf.Tensor3D[],
  values: tf.Tensor3D[],
  lengths: number[],
  group: number,
): DecodeState {
  const { arch } = model;
  const U = lengths.length;
  const H = arch.nHeads;
  const dh = headDim(arch);
  const P = keys[0].shape[1];
  const mask = new Float32Array(U * P);
  lengths.forEach((length, u) => mask.fill(NEG, u * P + length, (u + 1) * P));
  // Kept: the state outlives the caller's scope and is freed by disposeDecodeState.
  const keyOrder = group === 1 ? [0, 2, 1, 3] : [0, 2, 3, 1];
  const keyShape: [number, number, number] = group === 1 ? [U * H, P, dh] : [U * H, dh, P];
  const prefixKT = keys.map((k) =>
    tf.keep(tf.tidy(() => tf.reshape(tf.transpose(tf.reshape(k, [U, P, H, dh]), keyOrder), keyShape) as tf.Tensor3D)),
  );
  const prefixV = values.map((v) =>
    tf.keep(
      tf.tidy(
        () => tf.reshape(tf.transpose(tf.reshape(v, [U, P, H, dh]), [0, 2, 1, 3]), [U * H, P, dh]) as tf.Tensor3D,
      ),
    ),
  );
  return {
    prompts: U,
    group,
    prefixLength: P,
    prefixKT,
    prefixV,
    prefixMask: tf.keep(tf.tensor4d(mask, [U, 1, 1, P])),
    ownK: null,
    ownV: null,
  };
}

/**
 * decodeStep's attention, the rest of the step being the tfjs row-wise executor of the model's definition
 * (model-ops.ts, transformer.ts TfjsRowOps): the G queries of each prompt against its stacked keys, each completion's
 * query against its own keys so far (this step's appended), one softmax over both. Keeps each layer's own keys/values.
 */
class DecodeOps extends TfjsRowOps {
  readonly ownK: tf.Tensor3D[] = [];
  readonly ownV: tf.Tensor3D[] = [];

  constructor(
    arch: Architecture,
    rows: PassRows,
    private readonly state: DecodeState,
  ) {
    super(arch, rows, null);
  }

  attention({ q, k, v }: TfjsQkv, i: number): tf.Tensor2D {
    const state = this.state;
    const U = state.prompts;
    const G = state.group;
    const rows = U * G;
    const H = this.arch.nHeads;
    const d = this.arch.dModel;
    const dh = headDim(this.arch);
    const P = state.prefixLength;
    // Prompt part: per (prompt, head), the G queries against that prompt's keys.
    const qByPrompt = tf.reshape(tf.transpose(tf.reshape(q, [U, G, H, dh]), [0, 2, 1, 3]), [U * H, G, dh]);
    // With one query per prompt and head (G = 1, evaluation) a broadcast product and a sum beat WASM's slow batched
    // matMul; with a group of queries the product amortises better.
    const rawScores =
      G === 1 ? tf.sum(tf.mul(qByPrompt, state.prefixKT[i]), -1) : tf.matMul(qByPrompt, state.prefixKT[i]);
    const prefixScores = tf.add(tf.reshape(rawScores, [U, H, G, P]), state.prefixMask);
    const prefixRows = tf.reshape(tf.transpose(prefixScores, [0, 2, 1, 3]), [rows, H, P]);
    // Own part: per (completion, head), the query against the completion's own keys so far.
    const kNew = tf.reshape(k, [rows * H, 1, dh]) as tf.Tensor3D;
    const vNew = tf.reshape(v, [rows * H, 1, dh]) as tf.Tensor3D;
    const keys = state.ownK ? tf.concat([state.ownK[i], kNew], 1) : kNew;
    const values = state.ownV ? tf.concat([state.ownV[i], vNew], 1) : vNew;
    this.ownK.push(keys);
    this.ownV.push(values);
    const t = keys.shape[1];
    const ownScores = tf.reshape(tf.matMul(tf.reshape(q, [rows * H, 1, dh]), keys, false, true), [rows, H, t]);
    const probs = tf.softmax(tf.concat([prefixRows, ownScores], 2));
    const prefixProbs = tf.reshape(
      tf.transpose(tf.reshape(tf.slice(probs, [0, 0, 0], [-1, -1, P]), [U, G, H, P]), [0, 2, 1, 3]),
      [U * H, G, P],
    );
    const mixed =
      G === 1
        ? tf.sum(tf.mul(tf.reshape(prefixProbs, [U * H, P, 1]), state.prefixV[i]), 1)
        : tf.matMul(prefixProbs, state.prefixV[i]);
    const fromPrompt = tf.reshape(tf.transpose(tf.reshape(mixed, [U, H, G, dh]), [0, 2, 1, 3]), [rows, d]);
    const fromOwn = tf.reshape(
      tf.matMul(tf.reshape(tf.slice(probs, [0, 0, P], [-1, -1, -1]), [rows * H, 1, t]), values),
      [rows, d],
    );
    return tf.add(fromPrompt, fromOwn) as tf.Tensor2D;
  }
}

/**
 * Feed one token per completion (rows ordered prompt by prompt) at the given positions. Returns next-token logits
 * [rows, vocab] and the state with the new keys/values appended (the previous own tensors are disposed).
 */
export function decodeStep(
  model: TransformerModel,
  state: DecodeState,
  tokens: Int32Array,
  positions: Int32Array,
): tf.Tensor2D {
  const { arch, weights } = model;
  const past = { k: state.ownK, v: state.ownV };
  const out = tf.tidy(() => {
    const ops = new DecodeOps(arch, { tokens, images: [], slots: [], rope: ropeTables(arch, positions) }, state);
    let x = embed(ops, weights);
    weights.layers.forEach((layer, i) => {
      x = block(ops, arch, layer, i, x);
    });
    return { logits: head(ops, arch, weights, x), ownK: ops.ownK, ownV: ops.ownV } as unknown as tf.TensorContainer;
  }) as unknown as { logits: tf.Tensor2D; ownK: tf.Tensor3D[]; ownV: tf.Tensor3D[] };
  if (past.k) tf.dispose([...past.k, ...past.v!]);
  state.ownK = out.ownK;
  state.ownV = out.ownV;
  return out.logits;
}

export function disposeDecodeState(state: DecodeState): void {
  tf.dispose([...state.prefixKT, ...state.prefixV, state.prefixMask, ...(state.ownK ?? []), ...(state.ownV ?? [])]);
}
