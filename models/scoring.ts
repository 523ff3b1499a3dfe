// Log-probabilities of given completions (the learner's forward pass), differentiable with respect to the weights.
// GRPO scores G completions of each prompt, so the batch is run in two parts: every distinct prompt once (prefill,
// prompts left-padded to a common length), then all completions together, each attending to its prompt's keys and
// values. Compared with running G full copies of a ~200-token prompt this cuts the work about threefold, and the
// gradient still flows into the prompt positions (through the shared cache) exactly as in a full pass.
import * as tf from '@tensorflow/tfjs';
import type { SequenceBatchItem, TokenLogProbs } from './types.ts';
import type { CharTokenizer } from './tokenizer.ts';
import type { LoraSet } from './lora.ts';
import { causalMask, forward, logits, type ForwardBatch, type TransformerModel } from './transformer.ts';
import { promptBatch } from './sampling.ts';
import { gatherRows } from './ops.ts';

export function completionLogProbs(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  lora: LoraSet | null,
  items: SequenceBatchItem[],
  withEntropy: boolean,
): TokenLogProbs {
  const B = items.length;
  const L = Math.max(0, ...items.map((it) => it.completion.length));
  const V = model.arch.vocabSize;
  if (L === 0) {
    const empty = () => tf.zeros([B, 0]) as tf.Tensor2D;
    return { logProbs: empty(), mask: empty(), ...(withEntropy ? { entropy: empty() } : {}) };
  }
  // Distinct prompts (by identity: the trainer passes one EncodedPrompt object per group).
  const prompts: SequenceBatchItem['prompt'][] = [];
  const promptIndex = new Map<SequenceBatchItem['prompt'], number>();
  const rowPrompt = new Int32Array(B);
  items.forEach((item, b) => {
    let index = promptIndex.get(item.prompt);
    if (index === undefined) {
      index = prompts.length;
      prompts.push(item.prompt);
      promptIndex.set(item.prompt, index);
    }
    rowPrompt[b] = index;
  });
  const { batch: prefill, padLeft } = promptBatch(model, tokenizer, prompts);
  const P = prefill.length;
  const rowPad = Array.from(rowPrompt, (p) => padLeft[p]);

  // Completion tokens 0 … L-2 are inputs (the last token is only predicted); token j sits at position promptLength + j.
  const targets = new Float32Array(B * L * V);
  const maskValues = new Float32Array(B * L);
  const C = L - 1;
  const tokens = new Int32Array(B * C).fill(tokenizer.pad);
  const positions = new Int32Array(B * C);
  items.forEach((item, b) => {
    const promptLength = item.prompt.tokens.length;
    item.completion.forEach((t, j) => {
      if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
      targets[(b * L + j) * V + t] = 1;
      maskValues[b * L + j] = 1;
    });
    for (let j = 0; j < C; j++) {
      if (j < item.completion.length - 1) tokens[b * C + j] = item.completion[j];
      positions[b * C + j] = promptLength + j;
    }
  });

  return tf.tidy(() => {
    const first = forward(model, prefill, null, lora);
    const d = model.arch.dModel;
    // The prompt's last position predicts the first completion token.
    const lastOfPrompt = tf.reshape(tf.slice(tf.reshape(first.hidden, [prompts.length, P, d]), [0, P - 1, 0], [-1, 1, -1]), [prompts.length, d]);
    let rows = tf.reshape(gatherRows(lastOfPrompt, rowPrompt), [B, 1, d]);
    if (C > 0) {
      const past = first.cache.map((c) => ({ k: gatherRows(c.k, rowPrompt), v: gatherRows(c.v, rowPrompt) }));
      const rest: ForwardBatch = { batch: B, length: C, tokens, positions, images: [], slots: [], mask: causalMask(B, C, rowPad, P) };
      const second = forward(model, rest, past, lora);
      rows = tf.concat([rows, tf.reshape(second.hidden, [B, C, d])], 1);
    }
    const logp = tf.logSoftmax(logits(model, tf.reshape(rows, [B * L, d]) as tf.Tensor2D));
    const result: Record<string, tf.Tensor> = {
      logProbs: tf.reshape(tf.sum(tf.mul(logp, tf.tensor2d(targets, [B * L, V])), -1), [B, L]),
      mask: tf.tensor2d(maskValues, [B, L]),
    };
    if (withEntropy) result.entropy = tf.reshape(tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1)), [B, L]);
    return result;
  }) as unknown as TokenLogProbs;
}
