// Log-probabilities of given completions under a Hugging Face decoder (models/ layer): the learner's forward pass,
// differentiable with respect to the LoRA variables (and the base weights when recompute is off).
//
// Layout: each item is [left padding | prompt | completion | right padding], prompts right-aligned at column P (the
// longest prompt), so completion token j of every item sits at column P + j and is predicted by the logits of column
// P + j - 1: one slice of logit rows serves the whole batch. Padding is masked as keys; right padding comes after every
// real token, so causality keeps it out of the rows that matter. Positions follow the attention mask (generate()'s
// convention), so a left-padded prompt sees the same positions as it did when it was sampled.
import * as tf from '@tensorflow/tfjs';
import type { HfDecoder } from './decoder.ts';
import { customGrad } from '../ops.ts';

export interface ScoreItem {
  /** Prompt token ids (image positions hold the image token). */
  prompt: ArrayLike<number>;
  /** Completion token ids (may be empty). */
  completion: ArrayLike<number>;
  /** Prompt embeddings [P_b, H] with image features merged (else looked up from the ids). */
  promptEmbeds?: tf.Tensor2D;
  /** Gemma 3: 1 on the prompt's image tokens (bidirectional image blocks). */
  promptTokenTypeIds?: ArrayLike<number>;
}

export interface ScoreOptions {
  /** Apply the LoRA adapters (false: the reference policy). Default true. */
  useLora?: boolean;
  /** log softmax(logits / temperature): the policy that samples at this temperature. Default 1. */
  temperature?: number;
  withEntropy?: boolean;
  /** Recompute each block in the backward pass (LoRA gradients only; much less memory). Default false. */
  recompute?: boolean;
}

export interface CompletionScores {
  /** [B, L] log p(completion token), L = longest completion; 0 where mask is 0. */
  logProbs: tf.Tensor2D;
  /** [B, L] 1 for real completion tokens. */
  mask: tf.Tensor2D;
  /** [B, L] entropy of the next-token distribution (nats). */
  entropy?: tf.Tensor2D;
}

export function completionLogProbs(decoder: HfDecoder, items: ScoreItem[], options: ScoreOptions = {}): CompletionScores {
  const B = items.length;
  const L = Math.max(0, ...items.map((it) => it.completion.length));
  if (L === 0 || B === 0) {
    const empty = () => tf.zeros([B, 0]) as tf.Tensor2D;
    return { logProbs: empty(), mask: empty(), ...(options.withEntropy ? { entropy: empty() } : {}) };
  }
  const P = Math.max(...items.map((it) => it.prompt.length));
  if (items.some((it) => it.prompt.length === 0)) throw new Error('completionLogProbs: every prompt needs at least one token');
  const T = P + L;
  const V = decoder.config.vocabSize;
  const H = decoder.config.hiddenSize;
  const pad = decoder.config.padTokenId ?? 0;
  const ids: number[][] = [];
  const attentionMask: number[][] = [];
  const tokenTypes: number[][] = [];
  const maskValues = new Float32Array(B * L);
  const indices = new Int32Array(B * L * 2);
  items.forEach((it, b) => {
    const left = P - it.prompt.length;
    const row = new Array<number>(T).fill(pad);
    const m = new Array<number>(T).fill(0);
    const tt = new Array<number>(T).fill(0);
    for (let t = 0; t < it.prompt.length; t++) {
      row[left + t] = it.prompt[t];
      m[left + t] = 1;
      tt[left + t] = it.promptTokenTypeIds?.[t] ?? 0;
    }
    for (let j = 0; j < it.completion.length; j++) {
      const id = it.completion[j];
      if (!(id >= 0 && id < V)) throw new Error(`completionLogProbs: token ${id} outside the vocabulary`);
      row[P + j] = id;
      m[P + j] = 1;
      maskValues[b * L + j] = 1;
    }
    for (let j = 0; j < L; j++) {
      indices[(b * L + j) * 2] = b * L + j; // logit row predicting completion token j
      indices[(b * L + j) * 2 + 1] = j < it.completion.length ? it.completion[j] : 0;
    }
    ids.push(row);
    attentionMask.push(m);
    tokenTypes.push(tt);
  });
  const anyEmbeds = items.some((it) => it.promptEmbeds);
  const anyTypes = items.some((it) => it.promptTokenTypeIds);
  return tf.tidy(() => {
    let inputsEmbeds: tf.Tensor3D | undefined;
    if (anyEmbeds) {
      // Rows: given prompt embeddings where present, looked-up ones otherwise (completion tokens, padding).
      const looked = tf.reshape(decoder.embed(ids), [B, T, H]);
      inputsEmbeds = tf.stack(
        items.map((it, b) => {
          const row = tf.reshape(tf.slice(looked, [b, 0, 0], [1, T, H]), [T, H]);
          if (!it.promptEmbeds) return row;
          const left = P - it.prompt.length;
          const parts = [tf.slice(row, [0, 0], [left, H]), it.promptEmbeds, tf.slice(row, [P, 0], [L, H])];
          return tf.concat(parts.filter((p) => p.shape[0] > 0), 0);
        }),
      ) as tf.Tensor3D;
    }
    const logits = decoder.forward({
      ids,
      attentionMask,
      inputsEmbeds,
      tokenTypeIds: anyTypes ? tokenTypes : undefined,
      useLora: options.useLora,
      logitsFrom: P - 1,
      recompute: options.recompute,
    }).logits!; // [B, L + 1, V]: rows P - 1 … T - 1; the last predicts past the end
    const rows = tf.reshape(tf.slice(logits, [0, 0, 0], [B, L, V]), [B * L, V]);
    const scaled = options.temperature !== undefined && options.temperature !== 1 ? tf.div(rows, options.temperature) : rows;
    const logp = tf.logSoftmax(scaled); // [B·L, V]
    const mask = tf.tensor2d(maskValues, [B, L]);
    const picked = tf.reshape(pick(logp, indices, B * L, V), [B, L]);
    const result: CompletionScores = { logProbs: tf.mul(picked, mask) as tf.Tensor2D, mask };
    if (options.withEntropy) {
      const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1));
      result.entropy = tf.mul(tf.reshape(entropy, [B, L]), mask) as tf.Tensor2D;
    }
    return result as unknown as tf.TensorContainer;
  }) as unknown as CompletionScores;
}

/** values[n] = logp[indices[2n], indices[2n + 1]], with a gradient (tfjs has none for GatherNd; scatterND is it). */
function pick(logp: tf.Tensor, indices: Int32Array, n: number, v: number): tf.Tensor1D {
  const f = customGrad((x: tf.Tensor) => ({
    value: tf.tidy(() => tf.gatherND(x, tf.tensor2d(indices, [n, 2], 'int32'))),
    gradFunc: (dy: tf.Tensor) => tf.tidy(() => tf.scatterND(tf.tensor2d(indices, [n, 2], 'int32'), dy, [n, v])),
  }));
  return f(logp) as tf.Tensor1D;
}
