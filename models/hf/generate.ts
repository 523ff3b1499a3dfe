// Autoregressive decoding of a Hugging Face decoder with a KV cache (models/ layer), the way transformers'
// generate() runs it: one prefill over the (left-padded) prompts, then one token per step; each step appends a 1 to
// the attention mask and takes position ids = sum(mask) - 1, so left padding does not shift positions. Greedy by
// default; `choose` plugs in sampling. Rows that emitted a stop id keep being fed it (their later tokens are dropped).
import * as tf from '@tensorflow/tfjs';
import { disposeCache, type HfDecoder, type KVCache } from './decoder.ts';

export interface GenerateInput {
  /** Prompts [B][T], left-padded to one length. */
  ids: ArrayLike<number>[];
  /** [B][T]: 0 on left padding. Default: all ones. */
  attentionMask?: ArrayLike<number>[];
  /** Prefill embeddings [B, T, H] (image features merged); the caller keeps ownership. */
  inputsEmbeds?: tf.Tensor3D;
  /** Gemma 3 image blocks for the prefill (decode steps are text-only, causal). */
  tokenTypeIds?: ArrayLike<number>[];
}

export interface GenerateOptions {
  maxNewTokens: number;
  /** Next token of row `row` from its logits [V] (temperature 1). Default: argmax (lowest index on ties). */
  choose?: (logits: Float32Array, row: number) => number;
  /** A row stops after emitting one of these ids (default: none: exactly maxNewTokens per row). */
  stopIds?: number[];
  useLora?: boolean;
  /** Keep the logits that chose each token (tests, log-probs). */
  keepLogits?: boolean;
}

export interface GenerateResult {
  /** New ids per row (up to and including a stop id). */
  tokens: number[][];
  /** [B][steps] logits rows (with keepLogits): logits[b][t] chose tokens[b][t]. */
  logits?: Float32Array[][];
  finished: boolean[];
}

export function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

export function generate(model: HfDecoder, input: GenerateInput, options: GenerateOptions): GenerateResult {
  const B = input.ids.length;
  const T = input.ids[0]?.length ?? 0;
  const V = model.config.vocabSize;
  const choose = options.choose ?? ((row: Float32Array) => argmax(row));
  const stop = new Set(options.stopIds ?? []);
  const mask: number[][] = (input.attentionMask ?? input.ids.map((r) => Array.from(r, () => 1))).map((r) => Array.from(r));
  const tokens: number[][] = Array.from({ length: B }, () => []);
  const logitsKept: Float32Array[][] = Array.from({ length: B }, () => []);
  const finished = new Array<boolean>(B).fill(false);
  let cache: KVCache | null = null;
  if (options.maxNewTokens <= 0) return { tokens, finished, ...(options.keepLogits ? { logits: logitsKept } : {}) };
  try {
    let out = model.forward({
      ids: input.ids,
      attentionMask: mask,
      inputsEmbeds: input.inputsEmbeds,
      tokenTypeIds: input.tokenTypeIds,
      returnCache: true,
      useLora: options.useLora,
      logits: 'last',
    });
    for (let step = 0; step < options.maxNewTokens; step++) {
      cache = out.cache;
      out.hidden.dispose();
      const values = out.logits!.dataSync() as Float32Array; // [B, 1, V]
      out.logits!.dispose();
      const next: number[] = [];
      for (let b = 0; b < B; b++) {
        const row = values.subarray(b * V, (b + 1) * V);
        const id = finished[b] ? tokens[b][tokens[b].length - 1] : choose(row, b);
        next.push(id);
        if (finished[b]) continue;
        tokens[b].push(id);
        if (options.keepLogits) logitsKept[b].push(row.slice());
        if (stop.has(id)) finished[b] = true;
      }
      if (step === options.maxNewTokens - 1 || finished.every(Boolean)) break;
      for (const row of mask) row.push(1);
      const prev: KVCache | null = cache;
      out = model.forward({ ids: next.map((id) => [id]), attentionMask: mask, cache: prev, returnCache: true, useLora: options.useLora, logits: 'last' });
      disposeCache(prev);
      cache = null;
    }
  } finally {
    disposeCache(cache);
  }
  return { tokens, finished, ...(options.keepLogits ? { logits: logitsKept } : {}) };
}
