// Generation for the built-in model: prompts are run once (prefill), their key/value caches are copied to each of the
// G completions of the group, and all completions of all prompts then decode together, one batched step per token.
// Sampling itself (temperature, top-p, the stop at EOS) happens in JS on one [rows, vocab] logits read per step, with
// the caller's seeded Rng, so the same seed gives the same completions.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../core/rng.ts';
import type { Completion, EncodedPrompt, SamplingOptions } from './types.ts';
import type { CharTokenizer } from './tokenizer.ts';
import { causalMask, forward, logits, type ForwardBatch, type LayerCache, type TransformerModel } from './transformer.ts';
import type { LoraSet } from './lora.ts';
import { patchesPerImage } from './config.ts';

/** Lay out prompts left-padded to a common length (so every prompt ends in the last column). */
export function promptBatch(model: TransformerModel, tokenizer: CharTokenizer, prompts: EncodedPrompt[]): { batch: ForwardBatch; padLeft: number[] } {
  const length = Math.max(...prompts.map((p) => p.tokens.length));
  const tokens = new Int32Array(prompts.length * length).fill(tokenizer.pad);
  const positions = new Int32Array(prompts.length * length);
  const padLeft: number[] = [];
  const images: Float32Array[] = [];
  const imageIndex = new Map<Float32Array, number>();
  const slots: ForwardBatch['slots'] = [];
  prompts.forEach((prompt, b) => {
    const pad = length - prompt.tokens.length;
    padLeft.push(pad);
    prompt.tokens.forEach((t, i) => {
      tokens[b * length + pad + i] = t;
      positions[b * length + pad + i] = i;
    });
    addImageSlots(model, tokenizer, prompt, b * length + pad, images, imageIndex, slots);
  });
  const shared = padLeft.every((p) => p === 0) && prompts.length === 1;
  return {
    batch: {
      batch: prompts.length,
      length,
      tokens,
      positions: shared ? positions.slice(0, length) : positions,
      images,
      slots,
      mask: causalMask(prompts.length, length, padLeft),
    },
    padLeft,
  };
}

/** Record where a prompt's images sit: each run of IMG tokens (patchesPerImage long) takes the next image. */
export function addImageSlots(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  prompt: EncodedPrompt,
  offset: number,
  images: Float32Array[],
  imageIndex: Map<Float32Array, number>,
  slots: ForwardBatch['slots'],
): void {
  const p = patchesPerImage(model.arch);
  let next = 0;
  for (let i = 0; i < prompt.tokens.length; i++) {
    if (prompt.tokens[i] !== tokenizer.img) continue;
    const image = prompt.images[next++];
    if (!image) throw new Error(`prompt has more image tokens than images (${prompt.images.length})`);
    let index = imageIndex.get(image);
    if (index === undefined) {
      index = images.length;
      images.push(image);
      imageIndex.set(image, index);
    }
    slots.push({ image: index, start: offset + i });
    i += p - 1;
  }
  if (next !== prompt.images.length) throw new Error(`prompt has ${prompt.images.length} images but ${next} image token runs`);
}

/** Draw one token from a logits row; returns it with its log-probability at temperature 1. */
export function sampleToken(row: Float32Array, options: SamplingOptions, rng: Rng): { token: number; logProb: number } {
  const n = row.length;
  let max = -Infinity;
  let argmax = 0;
  for (let i = 0; i < n; i++) if (row[i] > max) { max = row[i]; argmax = i; }
  let z = 0;
  for (let i = 0; i < n; i++) z += Math.exp(row[i] - max);
  const logZ = max + Math.log(z);
  if (options.temperature <= 0) return { token: argmax, logProb: row[argmax] - logZ };
  const probs = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) total += probs[i] = Math.exp((row[i] - max) / options.temperature);
  let order: number[] = [];
  for (let i = 0; i < n; i++) order.push(i);
  if (options.topP < 1) {
    order.sort((a, b) => probs[b] - probs[a]);
    let cumulative = 0;
    let keep = 0;
    while (keep < n && cumulative < options.topP * total) cumulative += probs[order[keep++]];
    order = order.slice(0, Math.max(1, keep));
    total = cumulative;
  }
  let x = rng.next() * total;
  let token = order[order.length - 1];
  for (const i of order) {
    x -= probs[i];
    if (x < 0) { token = i; break; }
  }
  return { token, logProb: row[token] - logZ };
}

/**
 * Sample `group` completions for each prompt. Rows are ordered prompt by prompt; completions of one prompt share its
 * prefill. Stops when every row produced EOS or after maxNewTokens.
 */
export function sampleGroups(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  lora: LoraSet | null,
  prompts: EncodedPrompt[],
  group: number,
  options: SamplingOptions,
  rng: Rng,
): Completion[][] {
  const rows = prompts.length * group;
  const V = model.arch.vocabSize;
  const { batch, padLeft } = promptBatch(model, tokenizer, prompts);
  const rowPrompt = new Int32Array(rows).map((_, r) => Math.floor(r / group));
  // Prefill: run each prompt once, keep its last logits and its cache, copied to the rows of its group.
  let { next, cache } = tf.tidy((): tf.TensorContainer => {
    const out = forward(model, batch, null, lora);
    const last = tf.reshape(tf.slice(tf.reshape(out.hidden, [batch.batch, batch.length, -1]), [0, batch.length - 1, 0], [-1, 1, -1]), [batch.batch, -1]) as tf.Tensor2D;
    const index = tf.tensor1d(rowPrompt, 'int32');
    return {
      next: tf.gather(logits(model, last), index) as tf.Tensor2D,
      cache: out.cache.map((c) => ({ k: tf.gather(c.k, index) as tf.Tensor4D, v: tf.gather(c.v, index) as tf.Tensor4D })),
    } as unknown as tf.TensorContainer;
  }) as unknown as { next: tf.Tensor2D; cache: LayerCache[] };
  const rowPadLeft = Array.from(rowPrompt, (p) => padLeft[p]);
  const anyPadding = rowPadLeft.some((p) => p > 0);
  const tokens: number[][] = Array.from({ length: rows }, () => []);
  const logProbs: number[][] = Array.from({ length: rows }, () => []);
  const finished = new Array<boolean>(rows).fill(false);
  const promptLength = batch.length;
  for (let step = 0; step < options.maxNewTokens; step++) {
    const values = next.dataSync() as Float32Array;
    next.dispose();
    const fed = new Int32Array(rows).fill(tokenizer.pad);
    for (let r = 0; r < rows; r++) {
      if (finished[r]) continue;
      const { token, logProb } = sampleToken(values.subarray(r * V, (r + 1) * V), options, rng);
      tokens[r].push(token);
      logProbs[r].push(logProb);
      fed[r] = token;
      if (token === tokenizer.eos) finished[r] = true;
    }
    if (finished.every(Boolean) || step === options.maxNewTokens - 1) break;
    const pastLength = promptLength + step;
    const positions = anyPadding ? Int32Array.from(rowPadLeft, (p) => pastLength - p) : Int32Array.of(pastLength);
    const stepBatch: ForwardBatch = {
      batch: rows,
      length: 1,
      tokens: fed,
      positions,
      images: [],
      slots: [],
      mask: anyPadding ? causalMask(rows, 1, rowPadLeft, pastLength) : null,
    };
    const old = cache;
    ({ next, cache } = tf.tidy(() => {
      const out = forward(model, stepBatch, old, lora);
      return { next: logits(model, out.hidden), cache: out.cache } as unknown as tf.TensorContainer;
    }) as unknown as { next: tf.Tensor2D; cache: LayerCache[] });
    disposeCache(old);
  }
  disposeCache(cache);
  if (!next.isDisposed) next.dispose();
  const completions: Completion[][] = prompts.map(() => []);
  for (let r = 0; r < rows; r++) {
    completions[rowPrompt[r]].push({
      tokens: tokens[r],
      text: tokenizer.decode(tokens[r]),
      logProbs: Float32Array.from(logProbs[r]),
      finished: finished[r],
    });
  }
  return completions;
}

function disposeCache(cache: LayerCache[]): void {
  for (const c of cache) {
    c.k.dispose();
    c.v.dispose();
  }
}
