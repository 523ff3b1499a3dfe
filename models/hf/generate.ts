// Autoregressive decoding of a Hugging Face decoder with a KV cache, the way transformers'
// generate() runs it: one prefill over the (left-padded) prompts, then one token per step; each step appends a 1 to
// the attention mask and takes position ids = sum(mask) - 1, so left padding does not shift positions. Greedy by
// default; `choose` plugs in sampling. Rows that emitted a stop id keep being fed it (their later tokens are dropped).
// With `group` G each prompt is prefilled once and its cache copied to G rows (GRPO's G completions of one prompt).
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
  /**
   * Multimodal RoPE (Qwen-VL): the prompts' [3, B·T] positions (models/qwen-vl/rope-index.ts) and each prompt's
   * rope delta; decoding step s then sits at T + s + delta on all three axes (transformers' cache_position + delta).
   */
  mrope?: { positions: Int32Array; ropeDeltas: readonly number[] };
  /** Qwen3-VL DeepStack features of the prefill (HfDecoder ForwardInput.deepstack). */
  deepstack?: { rows: Int32Array; features: tf.Tensor2D[] };
}

export interface GenerateOptions {
  maxNewTokens: number;
  /** Next token of row `row` from its logits [V] (temperature 1). Default: argmax (lowest index on ties). */
  choose?: (logits: Float32Array, row: number) => number;
  /** A row stops after emitting one of these ids (default: none: exactly maxNewTokens per row). */
  stopIds?: number[];
  useLora?: boolean;
  /** Completions per prompt (default 1): rows of the result are prompt 0 × G, then prompt 1 × G, … */
  group?: number;
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

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** What a decoding loop keeps per row: the ids so far, the logits that chose them (keepLogits), and whether it stopped. */
export interface DecodeRows {
  tokens: number[][];
  logitsKept: Float32Array[][];
  finished: boolean[];
}

/** What both engines' decoding loops start from: group size, rows, the prompt mask and each row's own copy, the rows' state. */
export function decodeSetup(
  input: { ids: ArrayLike<number>[]; attentionMask?: ArrayLike<number>[] },
  options: GenerateOptions,
) {
  const G = options.group ?? 1;
  const B = input.ids.length * G;
  const promptMask: number[][] = (input.attentionMask ?? input.ids.map((r) => Array.from(r, () => 1))).map((r) =>
    Array.from(r),
  );
  const rows: DecodeRows = {
    tokens: Array.from({ length: B }, () => []),
    logitsKept: Array.from({ length: B }, () => []),
    finished: new Array<boolean>(B).fill(false),
  };
  return {
    G,
    B,
    T: input.ids[0]?.length ?? 0,
    choose: options.choose ?? ((row: Float32Array) => argmax(row)),
    stop: new Set(options.stopIds ?? []),
    promptMask,
    /** [B][T] growing by one per step: row b's attention mask (its prompt's, repeated for the G rows). */
    mask: promptMask.flatMap((r) => Array.from({ length: G }, () => [...r])),
    ...rows,
  };
}

/**
 * One decoding step of every row, the same for both engines (this file's tfjs loop, models/onnx/hf/hf-generate.ts):
 * row b's logits are row rowOf(b) of `values` [rows, V]; a running row appends its choice (and stops on a stop id), a
 * finished row is fed its last id again. Returns the ids to feed next, one per row.
 */
export function chooseNext(
  values: Float32Array,
  V: number,
  rowOf: (b: number) => number,
  rows: DecodeRows,
  choose: (logits: Float32Array, row: number) => number,
  stop: Set<number>,
  keepLogits: boolean,
): number[] {
  const { tokens, logitsKept, finished } = rows;
  const next: number[] = [];
  for (let b = 0; b < tokens.length; b++) {
    const r = rowOf(b);
    const row = values.subarray(r * V, (r + 1) * V);
    const id = finished[b] ? tokens[b][tokens[b].length - 1] : choose(row, b);
    next.push(id);
    if (finished[b]) continue;
    tokens[b].push(id);
    if (keepLogits) logitsKept[b].push(row.slice());
    if (stop.has(id)) finished[b] = true;
  }
  return next;
}

/** Rows of a cache repeated: row b becomes rows b·G … b·G + G - 1. Disposes nothing. */
function repeatCache(cache: KVCache, group: number): KVCache {
  const rows = cache.layers[0]?.k.shape[0] ?? 0;
  const index = Int32Array.from({ length: rows * group }, (_, i) => Math.floor(i / group));
  return tf.tidy(() => {
    const idx = tf.tensor1d(index, 'int32');
    return {
      layers: cache.layers.map((kv) => ({
        k: tf.gather(kv.k, idx) as tf.Tensor4D,
        v: tf.gather(kv.v, idx) as tf.Tensor4D,
      })),
      length: cache.length,
    };
  });
}

export function generate(model: HfDecoder, input: GenerateInput, options: GenerateOptions): GenerateResult {
  const { G, B, choose, stop, promptMask, mask, tokens, logitsKept, finished } = decodeSetup(input, options);
  const V = model.config.vocabSize;
  let cache: KVCache | null = null;
  if (options.maxNewTokens <= 0) return { tokens, finished, ...(options.keepLogits ? { logits: logitsKept } : {}) };
  try {
    let out = model.forward({
      ids: input.ids,
      attentionMask: promptMask,
      inputsEmbeds: input.inputsEmbeds,
      tokenTypeIds: input.tokenTypeIds,
      ...(input.mrope ? { mropePositions: input.mrope.positions } : {}),
      ...(input.deepstack ? { deepstack: input.deepstack } : {}),
      returnCache: true,
      useLora: options.useLora,
      logits: 'last',
    });
    if (G > 1) {
      const prefill = out.cache!;
      const logits = out.logits!;
      out = {
        ...out,
        cache: repeatCache(prefill, G),
        logits: tf.tidy(() =>
          tf.gather(
            logits,
            tf.tensor1d(
              Int32Array.from({ length: B }, (_, i) => Math.floor(i / G)),
              'int32',
            ),
          ),
        ),
      };
      disposeCache(prefill);
      logits.dispose();
    }
    for (let step = 0; step < options.maxNewTokens; step++) {
      cache = out.cache;
      out.hidden.dispose();
      const values = out.logits!.dataSync() as Float32Array; // [B, 1, V]
      out.logits!.dispose();
      const next = chooseNext(
        values,
        V,
        (b) => b,
        { tokens, logitsKept, finished },
        choose,
        stop,
        options.keepLogits ?? false,
      );
      if (step === options.maxNewTokens - 1 || finished.every(Boolean)) break;
      for (const row of mask) row.push(1);
      const prev: KVCache | null = cache;
      const T = input.ids[0].length;
      const deltas = input.mrope?.ropeDeltas;
      // The fed token sits at cache position T + step (pads counted).
      const at = deltas ? Array.from({ length: B }, (_, b) => T + step + deltas[Math.floor(b / G)]) : null;
      out = model.forward({
        ids: next.map((id) => [id]),
        attentionMask: mask,
        ...(at ? { mropePositions: [...at, ...at, ...at] } : {}),
        cache: prev,
        returnCache: true,
        useLora: options.useLora,
        logits: 'last',
      });
      disposeCache(prev);
      cache = null;
    }
  } finally {
    disposeCache(cache);
  }
  return { tokens, finished, ...(options.keepLogits ? { logits: logitsKept } : {}) };
}
