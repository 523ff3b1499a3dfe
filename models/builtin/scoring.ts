// Log-probabilities of given completions (the learner's forward pass), differentiable with respect to the weights.
// GRPO scores G completions of each prompt, so the batch is run in two parts: every distinct prompt once (prefill),
// then all completions together (right-padded to a common length), each group attending to its prompt's keys and
// values. Compared with running G full copies of a ~200-token prompt this cuts the work about threefold, and the
// gradient still flows into the prompt positions (through the shared cache) exactly as in a full pass.
import * as tf from '@tensorflow/tfjs';
import type { SequenceBatchItem, TokenLogProbs } from '../types.ts';
import type { CharTokenizer } from './tokenizer.ts';
import type { LoraSet } from './lora.ts';
import { forward, logits, sharedFrom, type Group, type TransformerModel } from './transformer.ts';
import { packPrompts } from './sampling.ts';
import { customGrad, mm } from '../ops.ts';
import { loraVariables } from './lora.ts';
import { weightEntries } from './weights.ts';

function scoreBatch(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  lora: LoraSet | null,
  items: SequenceBatchItem[],
  withEntropy: boolean,
  temperature: number,
): TokenLogProbs {
  const B = items.length;
  const L = Math.max(0, ...items.map((it) => it.completion.length));
  const V = model.arch.vocabSize;
  const d = model.arch.dModel;
  if (L === 0) {
    const empty = () => tf.zeros([B, 0]) as tf.Tensor2D;
    return { logProbs: empty(), mask: empty(), ...(withEntropy ? { entropy: empty() } : {}) };
  }
  // Distinct prompts (by identity: the trainer passes one EncodedPrompt object per group), and the items of each.
  const prompts: SequenceBatchItem['prompt'][] = [];
  const members: number[][] = [];
  const promptIndex = new Map<SequenceBatchItem['prompt'], number>();
  items.forEach((item, b) => {
    let index = promptIndex.get(item.prompt);
    if (index === undefined) {
      index = prompts.length;
      prompts.push(item.prompt);
      members.push([]);
      promptIndex.set(item.prompt, index);
    }
    members[index].push(b);
  });
  const order = members.flat(); // grouped order → original item index
  const { batch: prefill, starts, ends } = packPrompts(model, tokenizer, prompts);

  // Completion tokens 0 … L-2 are inputs (the last one is only predicted); token j continues the prompt's positions.
  const C = L - 1;
  const tokens = new Int32Array(B * C).fill(tokenizer.pad);
  const positions = new Int32Array(B * C);
  const targets = new Float32Array(B * L * V);
  const maskValues = new Float32Array(B * L);
  order.forEach((b, row) => {
    const item = items[b];
    item.completion.forEach((t, j) => {
      if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
      targets[(row * L + j) * V + t] = 1;
      maskValues[b * L + j] = 1;
    });
    const cursor = ends[promptIndex.get(item.prompt)!].clone();
    for (let j = 0; j < C; j++) {
      if (j < item.completion.length - 1) tokens[row * C + j] = item.completion[j];
      positions[row * C + j] = cursor.push(tokens[row * C + j]);
    }
  });
  const inOrder = order.every((b, row) => b === row);
  const permutation = new Float32Array(B * B); // original row b ← grouped row
  order.forEach((b, row) => (permutation[b * B + row] = 1));

  return tf.tidy(() => {
    const first = forward(model, prefill, lora);
    let offset = 0;
    const groups: Group[] = prompts.map((p, u) => {
      const g: Group = {
        start: offset,
        count: members[u].length,
        length: C,
        shared: sharedFrom(first, starts[u], p.tokens.length),
        past: null,
      };
      offset += members[u].length * C;
      return g;
    });
    const second = C > 0 ? forward(model, { tokens, positions, images: [], slots: [], groups }, lora) : null;
    // Rows predicting the completion: the prompt's last position, then the completion's own positions.
    const blocks = prompts.map((p, u) => {
      const n = members[u].length;
      const last = tf.tile(
        tf.reshape(tf.slice(first.hidden, [starts[u] + p.tokens.length - 1, 0], [1, -1]), [1, 1, d]),
        [n, 1, 1],
      );
      if (!second) return last;
      return tf.concat([last, tf.reshape(tf.slice(second.hidden, [groups[u].start, 0], [n * C, -1]), [n, C, d])], 1);
    });
    const rows = tf.reshape(blocks.length === 1 ? blocks[0] : tf.concat(blocks, 0), [B * L, d]) as tf.Tensor2D;
    // The policy that samples at temperature T is softmax(logits / T): its log-probabilities are the ones the
    // importance ratio and the KL compare (as TRL does), not those of the untempered model.
    const scaled = temperature === 1 ? logits(model, rows) : tf.div(logits(model, rows), temperature);
    const logp = tf.logSoftmax(scaled);
    const reorder = (t: tf.Tensor): tf.Tensor2D => {
      const grouped = tf.reshape(t, [B, L]) as tf.Tensor2D;
      return inOrder ? grouped : mm(tf.tensor2d(permutation, [B, B]), grouped);
    };
    const result: Record<string, tf.Tensor> = {
      logProbs: reorder(tf.sum(tf.mul(logp, tf.tensor2d(targets, [B * L, V])), -1)),
      mask: tf.tensor2d(maskValues, [B, L]),
    };
    if (withEntropy) result.entropy = reorder(tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1)));
    return result;
  }) as unknown as TokenLogProbs;
}

/** Sequences per chunk when a large batch is differentiated chunk by chunk. */
const CHUNK_SEQUENCES = 8;

/** True while tfjs records operations for a gradient (inside tf.grads / tf.variableGrads). */
function recordingGradients(): boolean {
  return ((tf.engine() as unknown as { state: { gradientDepth: number } }).state.gradientDepth ?? 0) > 0;
}

/** Split items into chunks of whole prompt groups, about CHUNK_SEQUENCES sequences each. */
function chunksOf(items: SequenceBatchItem[]): number[][] {
  const byPrompt = new Map<SequenceBatchItem['prompt'], number[]>();
  items.forEach((item, i) => {
    const list = byPrompt.get(item.prompt) ?? [];
    list.push(i);
    byPrompt.set(item.prompt, list);
  });
  const chunks: number[][] = [];
  let current: number[] = [];
  for (const group of byPrompt.values()) {
    if (current.length > 0 && current.length + group.length > CHUNK_SEQUENCES) {
      chunks.push(current);
      current = [];
    }
    current.push(...group);
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Completion log-probabilities, differentiable. A batch larger than one chunk, when differentiated, is checkpointed:
 * the forward pass runs without recording, and the backward pass recomputes each chunk (a few prompt groups) under its
 * own gradient tape, so memory holds one chunk's activations instead of the whole batch's (on WASM a 32-sequence
 * GRPO batch otherwise approaches the 4 GB heap limit). The price is one extra forward pass. The entropy carries its
 * gradient in that mode too (an entropy bonus differentiates it), recomputed only when the loss uses it.
 */
export function completionLogProbs(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  lora: LoraSet | null,
  items: SequenceBatchItem[],
  withEntropy: boolean,
  temperature = 1,
): TokenLogProbs {
  if (!(temperature > 0)) throw new Error(`temperature must be positive, got ${temperature}`);
  const chunks = recordingGradients() ? chunksOf(items) : [];
  const variables = (lora ? loraVariables(lora) : weightEntries(model.weights).map((e) => e.variable)).filter(
    (v) => v.trainable,
  );
  if (chunks.length <= 1 || variables.length === 0)
    return scoreBatch(model, tokenizer, lora, items, withEntropy, temperature);
  const B = items.length;
  const L = Math.max(...items.map((it) => it.completion.length));
  const maskValues = new Float32Array(B * L);
  items.forEach((item, b) => maskValues.fill(1, b * L, b * L + item.completion.length));
  // The value is [logProbs; entropy] stacked, so one custom-gradient node carries both (entropy gets no gradient).
  const differentiable = customGrad((...inputs: unknown[]) => {
    void inputs;
    const all = scoreBatch(model, tokenizer, lora, items, withEntropy, temperature);
    return {
      value: all.entropy ? tf.concat([all.logProbs, all.entropy], 0) : all.logProbs,
      gradFunc: (dy: tf.Tensor) => {
        const upstream = dy.arraySync() as number[][];
        // The entropy rows [B, 2B) carry a gradient only when the loss uses the entropy (an entropy bonus); else they
        // are zero and the chunks skip the entropy.
        const entropyGrad = withEntropy && upstream.slice(B).some((row) => row.some((v) => v !== 0));
        const total = variables.map((v) => tf.zerosLike(v) as tf.Tensor);
        for (const chunk of chunks) {
          // A nested gradient computation clears tfjs's tape when it ends; the outer backward pass still needs it.
          const state = (tf.engine() as unknown as { state: { activeTape: unknown } }).state;
          const outerTape = state.activeTape;
          let grads: tf.NamedTensorMap;
          try {
            ({ grads } = tf.variableGrads(() => {
              const part = scoreBatch(
                model,
                tokenizer,
                lora,
                chunk.map((i) => items[i]),
                entropyGrad,
                temperature,
              );
              const width = part.logProbs.shape[1];
              const weights = tf.tensor2d(
                chunk.flatMap((i) => upstream[i].slice(0, width)),
                [chunk.length, width],
              );
              const logpTerm = tf.sum(tf.mul(part.logProbs, weights)) as tf.Scalar;
              if (!entropyGrad || !part.entropy) return logpTerm;
              const entropyWeights = tf.tensor2d(
                chunk.flatMap((i) => upstream[B + i].slice(0, width)),
                [chunk.length, width],
              );
              return tf.add(logpTerm, tf.sum(tf.mul(part.entropy, entropyWeights))) as tf.Scalar;
            }, variables));
          } finally {
            state.activeTape = outerTape;
          }
          variables.forEach((v, k) => {
            // A variable this chunk does not use (the image projection in a text-only chunk) has no gradient in it.
            const g = grads[v.name];
            if (!g) return;
            const next = tf.add(total[k], g);
            total[k].dispose();
            total[k] = next;
          });
          tf.dispose(Object.values(grads));
        }
        return total;
      },
    };
  });
  const stacked = differentiable(...variables) as tf.Tensor2D;
  const mask = tf.tensor2d(maskValues, [B, L]);
  if (!withEntropy) return { logProbs: stacked, mask };
  return { logProbs: tf.slice(stacked, [0, 0], [B, L]), mask, entropy: tf.slice(stacked, [B, 0], [B, L]) };
}
