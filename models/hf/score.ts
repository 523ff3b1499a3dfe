// Log-probabilities of given completions under a Hugging Face decoder: the learner's forward pass,
// differentiable with respect to the LoRA variables (and the base weights when recompute is off).
//
// Layout: consecutive items that share a prompt (the same array, and the same prompt embeddings when given) are packed
// into one row, [prompt | completion 1 | completion 2 | … | right padding]: the prompt goes through the network once
// and every completion of the group attends to it (segments: a completion sees the prompt and itself only, never its
// neighbours; layers/attention.ts buildMask). Positions restart after the prompt for each completion, so completion k
// sees exactly the positions and keys it saw when it was sampled, and the gradient reaches the prompt once, summed
// over the group (the same numbers as one row per completion, at a fraction of the work on long image prompts: a GRPO
// group of G completions of a P-token prompt costs P + Σ L tokens instead of G·P + Σ L). Items with a prompt of their
// own get a row each ([prompt | completion | padding]).
// Completion token j of an item is predicted by the hidden state of the position before it: the prompt's last
// position for j = 0, the completion's own token j - 1 otherwise. Those rows are gathered ([B·L, H]) and only they go
// through the output head.
import * as tf from '@tensorflow/tfjs';
import type { HfDecoder } from './decoder.ts';
import { customGrad, mm } from '../ops.ts';

export interface ScoreItem {
  /** Prompt token ids (image positions hold the image token). */
  prompt: ArrayLike<number>;
  /** Completion token ids (may be empty). */
  completion: ArrayLike<number>;
  /** Prompt embeddings [P_b, H] with image features merged (else looked up from the ids). */
  promptEmbeds?: tf.Tensor2D;
  /** Gemma 3: 1 on the prompt's image tokens (bidirectional image blocks). */
  promptTokenTypeIds?: ArrayLike<number>;
  /**
   * Multimodal RoPE (Qwen-VL): the prompt's [3, P] positions (axis-major) and its rope delta; completion token j then
   * sits at P + j + delta on all three axes, where it was sampled.
   */
  promptMrope?: { positions: Int32Array; ropeDelta: number };
  /** Qwen3-VL DeepStack: the prompt's image-token rows (prompt-relative, in order) and their features per layer. */
  promptDeepstack?: { rows: Int32Array; features: tf.Tensor2D[] };
}

export interface ScoreOptions {
  /** Apply the LoRA adapters (false: the reference policy). Default true. */
  useLora?: boolean;
  /** log softmax(logits / temperature): the policy that samples at this temperature. Default 1. */
  temperature?: number;
  withEntropy?: boolean;
  /** Recompute each block in the backward pass (LoRA gradients only; much less memory). Default false. */
  recompute?: boolean;
  /**
   * Output head in blocks of rows, recomputed in the backward pass: the [rows, vocabulary] logits are never held
   * whole (at SmolVLM's 49,280-token vocabulary they were most of the learner's memory). No gradient reaches the head's
   * weights, so this is for LoRA training and gradient-free passes. Default false.
   */
  leanHead?: boolean;
  /** Pack consecutive items with the same prompt into one row (see the header). Default true. */
  sharePrompts?: boolean;
}

export interface CompletionScores {
  /** [B, L] log p(completion token), L = longest completion; 0 where mask is 0. */
  logProbs: tf.Tensor2D;
  /** [B, L] 1 for real completion tokens. */
  mask: tf.Tensor2D;
  /** [B, L] entropy of the next-token distribution (nats). */
  entropy?: tf.Tensor2D;
}

/** Rows of the lean output head computed at a time ([rows, V] logits: 256 × 49,280 floats = 50 MB at SmolVLM). */
const HEAD_ROWS = 256;

/**
 * Consecutive runs of items for which `same(previous, next)` holds, as index lists in order: the rows of the packed
 * layout (and what a learner pass costs: one prompt per run, models/hf/policy.ts passTokens).
 */
export function promptRuns<T>(items: readonly T[], same: (a: T, b: T) => boolean): number[][] {
  const runs: number[][] = [];
  items.forEach((it, i) => {
    const last = runs[runs.length - 1];
    if (last && same(items[last[last.length - 1]], it)) last.push(i);
    else runs.push([i]);
  });
  return runs;
}

const samePrompt = (a: ScoreItem, b: ScoreItem) =>
  a.prompt === b.prompt &&
  a.promptEmbeds === b.promptEmbeds &&
  a.promptTokenTypeIds === b.promptTokenTypeIds &&
  a.promptMrope === b.promptMrope &&
  a.promptDeepstack === b.promptDeepstack;

export function completionLogProbs(
  decoder: HfDecoder,
  items: ScoreItem[],
  options: ScoreOptions = {},
): CompletionScores {
  const N = items.length;
  const L = Math.max(0, ...items.map((it) => it.completion.length));
  if (L === 0 || N === 0) {
    const empty = () => tf.zeros([N, 0]) as tf.Tensor2D;
    return { logProbs: empty(), mask: empty(), ...(options.withEntropy ? { entropy: empty() } : {}) };
  }
  if (items.some((it) => it.prompt.length === 0))
    throw new Error('completionLogProbs: every prompt needs at least one token');
  const V = decoder.config.vocabSize;
  const H = decoder.config.hiddenSize;
  const pad = decoder.config.padTokenId ?? 0;
  const runs = options.sharePrompts === false ? items.map((_, i) => [i]) : promptRuns(items, samePrompt);
  const T = Math.max(
    ...runs.map((run) => items[run[0]].prompt.length + run.reduce((n, i) => n + items[i].completion.length, 0)),
  );
  const ids: number[][] = [];
  const attentionMask: number[][] = [];
  const positionIds: number[][] = [];
  const segments: number[][] = [];
  const tokenTypes: number[][] = [];
  const maskValues = new Float32Array(N * L);
  const targets = new Int32Array(N * L);
  const predictors = new Int32Array(N * L); // [N·L] row of hidden [B·T, H] that predicts completion token j of item n
  runs.forEach((run, r) => {
    const prompt = items[run[0]].prompt;
    const P = prompt.length;
    const row = new Array<number>(T).fill(pad);
    const m = new Array<number>(T).fill(0);
    const pos = new Array<number>(T).fill(1);
    const seg = new Array<number>(T).fill(-1);
    const tt = new Array<number>(T).fill(0);
    for (let t = 0; t < P; t++) {
      row[t] = prompt[t];
      m[t] = 1;
      pos[t] = t;
      seg[t] = 0;
      tt[t] = items[run[0]].promptTokenTypeIds?.[t] ?? 0;
    }
    let at = P;
    run.forEach((n, k) => {
      const completion = items[n].completion;
      for (let j = 0; j < completion.length; j++) {
        const id = completion[j];
        if (!(id >= 0 && id < V)) throw new Error(`completionLogProbs: token ${id} outside the vocabulary`);
        row[at + j] = id;
        m[at + j] = 1;
        pos[at + j] = P + j;
        seg[at + j] = k + 1;
        maskValues[n * L + j] = 1;
        targets[n * L + j] = id;
        predictors[n * L + j] = r * T + (j === 0 ? P - 1 : at + j - 1);
      }
      at += completion.length;
    });
    ids.push(row);
    attentionMask.push(m);
    positionIds.push(pos);
    segments.push(seg);
    tokenTypes.push(tt);
  });
  // Multimodal positions [3, B·T]: a prompt's own where given, else its 1-D positions on every axis; a completion's
  // token j at P + j + delta (delta 0 without multimodal RoPE).
  const B = runs.length;
  let mropePositions: Int32Array | undefined;
  if (items.some((it) => it.promptMrope)) {
    mropePositions = new Int32Array(3 * B * T);
    runs.forEach((run, r) => {
      const { prompt, promptMrope } = items[run[0]];
      const P = prompt.length;
      const delta = promptMrope?.ropeDelta ?? 0;
      for (let a = 0; a < 3; a++)
        for (let t = 0; t < T; t++) {
          const pos = positionIds[r][t];
          const given = t < P && promptMrope ? promptMrope.positions[a * P + t] : null;
          mropePositions![(a * B + r) * T + t] = given ?? (t >= P && attentionMask[r][t] ? pos + delta : pos);
        }
    });
  }
  const deepRuns = runs.flatMap((run, r) => {
    const d = items[run[0]].promptDeepstack;
    return d ? [{ r, d }] : [];
  });
  const anyEmbeds = items.some((it) => it.promptEmbeds);
  const anyTypes = items.some((it) => it.promptTokenTypeIds);
  const temperature = options.temperature ?? 1;
  return tf.tidy(() => {
    let inputsEmbeds: tf.Tensor3D | undefined;
    if (anyEmbeds) {
      // Rows: given prompt embeddings where present, looked-up ones otherwise (completion tokens, padding).
      const looked = decoder.embed(ids); // [B, T, H]
      inputsEmbeds = tf.stack(
        runs.map((run, r) => {
          const rowEmbeds = tf.reshape(tf.slice(looked, [r, 0, 0], [1, T, H]), [T, H]);
          const given = items[run[0]].promptEmbeds;
          if (!given) return rowEmbeds;
          const P = items[run[0]].prompt.length;
          return P === T ? given : tf.concat([given, tf.slice(rowEmbeds, [P, 0], [T - P, H])], 0);
        }),
      ) as tf.Tensor3D;
    }
    const layers = Math.max(0, ...deepRuns.map(({ d }) => d.features.length));
    const deepstack =
      deepRuns.length > 0
        ? {
            rows: Int32Array.from(deepRuns.flatMap(({ r, d }) => Array.from(d.rows, (t) => r * T + t))),
            features: Array.from(
              { length: layers },
              (_, j) => tf.concat(deepRuns.map(({ d }) => d.features[j])) as tf.Tensor2D,
            ),
          }
        : undefined;
    const { hidden } = decoder.forward({
      ids,
      attentionMask,
      positionIds,
      segments,
      ...(mropePositions ? { mropePositions } : {}),
      ...(deepstack ? { deepstack } : {}),
      inputsEmbeds,
      tokenTypeIds: anyTypes ? tokenTypes : undefined,
      useLora: options.useLora,
      logits: 'none',
      recompute: options.recompute,
    }); // hidden [B·T, H], final-normalised
    const rows = gatherRows(hidden, predictors); // [N·L, H]
    const mask = tf.tensor2d(maskValues, [N, L]);
    let picked: tf.Tensor;
    let entropy: tf.Tensor | undefined;
    if (options.leanHead) {
      const both = leanHead(decoder, rows, targets, temperature); // [N·L, 2]
      picked = tf.reshape(tf.slice(both, [0, 0], [N * L, 1]), [N, L]);
      if (options.withEntropy) entropy = tf.reshape(tf.slice(both, [0, 1], [N * L, 1]), [N, L]);
    } else {
      const logits = decoder.head(rows); // [N·L, V]
      const logp = tf.logSoftmax(temperature !== 1 ? tf.div(logits, temperature) : logits); // [N·L, V]
      picked = tf.reshape(pick(logp, targets, N * L, V), [N, L]);
      if (options.withEntropy) entropy = tf.reshape(tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1)), [N, L]);
    }
    const result: CompletionScores = { logProbs: tf.mul(picked, mask) as tf.Tensor2D, mask };
    if (entropy) result.entropy = tf.mul(entropy, mask) as tf.Tensor2D;
    return result as unknown as tf.TensorContainer;
  }) as unknown as CompletionScores;
}

/**
 * x[rows[n]] for n < rows.length ([n, H]), with a gradient: tfjs's gather gradient needs UnsortedSegmentSum, which the
 * WASM backend lacks; scatterND sums the rows that repeat (a prompt's last row predicts every completion's first token).
 */
function gatherRows(x: tf.Tensor2D, rows: Int32Array): tf.Tensor2D {
  const [M, H] = x.shape;
  const f = customGrad((t: tf.Tensor) => ({
    value: tf.tidy(() => tf.gather(t, tf.tensor1d(rows, 'int32'))),
    gradFunc: (dy: tf.Tensor) => tf.tidy(() => tf.scatterND(tf.tensor2d(rows, [rows.length, 1], 'int32'), dy, [M, H])),
  }));
  return f(x) as tf.Tensor2D;
}

/** values[n] = logp[n, targets[n]], with a gradient (tfjs has none for GatherNd; scatterND is it). */
function pick(logp: tf.Tensor, targets: Int32Array, n: number, v: number): tf.Tensor1D {
  const indices = () =>
    tf.tensor2d(
      Int32Array.from({ length: 2 * n }, (_, i) => (i % 2 === 0 ? i / 2 : targets[(i - 1) / 2])),
      [n, 2],
      'int32',
    );
  const f = customGrad((x: tf.Tensor) => ({
    value: tf.tidy(() => tf.gatherND(x, indices())),
    gradFunc: (dy: tf.Tensor) => tf.tidy(() => tf.scatterND(indices(), dy, [n, v])),
  }));
  return f(logp) as tf.Tensor1D;
}

/**
 * Output head, log-softmax at `temperature`, the target's log-probability and the entropy, HEAD_ROWS rows at a time:
 * rows [N, H] → [N, 2] (log p(target), entropy). The backward pass recomputes each block's logits and forms
 *   d/dz log p(target) = onehot - p,   d/dz H = -p ⊙ (log p + H)      (z = logits / temperature)
 * then through the temperature and Gemma's soft-cap (d c·tanh(l/c) = 1 - tanh²(l/c)) to the rows: dx = dl · W_outᵀ.
 * The head's weights get no gradient (they are frozen under LoRA).
 */
function leanHead(decoder: HfDecoder, rows: tf.Tensor2D, targets: Int32Array, temperature: number): tf.Tensor2D {
  const [N, H] = rows.shape;
  const V = decoder.config.vocabSize;
  const cap = decoder.config.finalLogitSoftcap;
  const W = decoder.weights.lmHead as tf.Tensor2D; // [H, V]
  const blocks: Array<[number, number]> = [];
  for (let s = 0; s < N; s += HEAD_ROWS) blocks.push([s, Math.min(HEAD_ROWS, N - s)]);
  const indices = (s: number, n: number) =>
    tf.tensor2d(
      Int32Array.from({ length: 2 * n }, (_, i) => (i % 2 === 0 ? i / 2 : targets[s + (i - 1) / 2])),
      [n, 2],
      'int32',
    );
  const f = customGrad((x: tf.Tensor, save: (t: tf.Tensor[]) => void) => {
    const value = tf.tidy(() =>
      tf.concat(
        blocks.map(([s, n]) =>
          tf.tidy(() => {
            const z = tf.div(decoder.head(tf.slice(x as tf.Tensor2D, [s, 0], [n, H])), temperature);
            const logp = tf.logSoftmax(z); // [n, V]
            const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1));
            return tf.stack([tf.gatherND(logp, indices(s, n)) as tf.Tensor1D, entropy], 1);
          }),
        ),
        0,
      ),
    );
    save([x]);
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        tf.tidy(() => {
          const [xs] = saved;
          const Wt = tf.transpose(W); // [V, H]: a plain product on the WASM fast path (see ops.ts)
          return tf.concat(
            blocks.map(([s, n]) =>
              tf.tidy(() => {
                const l = mm(tf.slice(xs as tf.Tensor2D, [s, 0], [n, H]), W); // [n, V] before the soft-cap
                const capped = cap === null ? l : tf.mul(tf.tanh(tf.div(l, cap)), cap);
                const logp = tf.logSoftmax(tf.div(capped, temperature));
                const p = tf.exp(logp);
                const entropy = tf.neg(tf.sum(tf.mul(p, logp), -1, true)); // [n, 1]
                const d = tf.slice(dy, [s, 0], [n, 2]);
                const dPick = tf.slice(d, [0, 0], [n, 1]);
                const dEntropy = tf.slice(d, [0, 1], [n, 1]);
                const onehot = tf.oneHot(tf.tensor1d(targets.subarray(s, s + n), 'int32'), V);
                const dz = tf.sub(tf.mul(dPick, tf.sub(onehot, p)), tf.mul(dEntropy, tf.mul(p, tf.add(logp, entropy))));
                let dl = tf.div(dz, temperature);
                if (cap !== null) dl = tf.mul(dl, tf.sub(1, tf.square(tf.tanh(tf.div(l, cap)))));
                return mm(dl as tf.Tensor2D, Wt as tf.Tensor2D); // [n, H]
              }),
            ),
            0,
          );
        }),
    };
  });
  return f(rows) as tf.Tensor2D;
}
