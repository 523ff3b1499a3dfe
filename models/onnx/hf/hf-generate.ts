// Autoregressive decoding of a Hugging Face decoder on ONNX Runtime, step for step what models/hf/generate.ts does on
// tfjs: one prefill over the left-padded prompts (only the last position's logits leave the graph), the prompt cache
// repeated for a group's G rows, then one token per step; each step appends a 1 to the attention mask and takes
// position ids from it. Rows that emitted a stop id keep being fed it. The token embeddings of each step are looked up
// in tfjs (HfDecoder.embed), as the graph starts at inputs_embeds. On the host the caches are buffers of the loop's
// whole length, which each step reads in place and writes its new keys and values into (host-cache.ts); on WebGPU
// they stay on the GPU (hf-session.ts), each released once the next one exists.
import * as tf from '@tensorflow/tfjs';
import type { HfDecoder } from '../../hf/decoder.ts';
import { chooseNext, decodeSetup, type GenerateOptions, type GenerateResult } from '../../hf/generate.ts';
import type { HfOrtModel, HfOrtCache, HfRunRequest } from './hf-session.ts';
import { HostCache } from './host-cache.ts';

export interface OrtGenerateInput {
  /** Prompts [B][T], left-padded to one length. */
  ids: ArrayLike<number>[];
  /** [B][T]: 0 on left padding. Default: all ones. */
  attentionMask?: ArrayLike<number>[];
  /** Prefill embeddings [B · T · H] (image features merged); default the token embeddings. */
  embeds?: Float32Array;
  /** Gemma 3 image blocks for the prefill. */
  tokenTypeIds?: ArrayLike<number>[];
  /** Qwen-VL: the prompts' [3, B · T] positions and rope deltas; decoding step s sits at T + s + delta on all axes. */
  mropePositions?: Int32Array;
  ropeDeltas?: readonly number[];
  /** Qwen3-VL DeepStack of the prefill (HfRunRequest.deepstack). */
  deepstack?: { rows: Int32Array; features: Float32Array[] };
}

/** Token embeddings [B · T · H] of ids [B][T] (Gemma's scaling included), from the tfjs decoder's table. */
export function embedIds(decoder: HfDecoder, ids: ArrayLike<number>[]): Float32Array {
  return tf.tidy(() => decoder.embed(ids).dataSync() as Float32Array).slice();
}

/** One decode step of every row: its logits [B, 1, V]. */
type Step = (req: Omit<HfRunRequest, 'cache' | 'useLora' | 'keepCache'>) => Float32Array;

export function generateOrt(model: HfOrtModel, input: OrtGenerateInput, options: GenerateOptions): GenerateResult {
  const { G, B, T, choose, stop, promptMask, mask, tokens, logitsKept, finished } = decodeSetup(input, options);
  const U = input.ids.length;
  const V = model.config.vocabSize;
  const useLora = options.useLora ?? true;
  if (options.maxNewTokens <= 0) return { tokens, finished, ...(options.keepLogits ? { logits: logitsKept } : {}) };
  const prefill = model.run({
    embeds: input.embeds ?? embedIds(model.decoder, input.ids),
    rows: U,
    seq: T,
    attentionMask: promptMask,
    tokenTypeIds: input.tokenTypeIds,
    ...(input.mropePositions ? { mropePositions: input.mropePositions } : {}),
    ...(input.deepstack ? { deepstack: input.deepstack } : {}),
    cache: null,
    logitRows: [T - 1],
    useLora,
  });
  let values = prefill.logits; // [U, 1, V]
  let rowOf = (b: number) => Math.floor(b / G);
  let decode: Step;
  let end: () => void;
  if (model.hostCaches) {
    // Room for the prompt and the maxNewTokens - 1 tokens fed back (the last draw needs no run); rows b·G … b·G + G - 1
    // start from prompt b's cache.
    const cache = new HostCache(prefill.cache, rowOf, B, T + options.maxNewTokens - 1);
    decode = (req) => model.decodeStep({ ...req, useLora }, cache);
    end = () => {};
  } else {
    let cache: HfOrtCache = prefill.cache;
    if (G > 1) {
      cache = model.repeatCache(prefill.cache, G);
      model.releaseCache(prefill.cache);
    }
    decode = (req) => {
      const out = model.run({ ...req, cache, useLora });
      model.releaseCache(cache);
      cache = out.cache;
      return out.logits;
    };
    end = () => model.releaseCache(cache);
  }
  try {
    for (let step = 0; step < options.maxNewTokens; step++) {
      const next = chooseNext(
        values,
        V,
        rowOf,
        { tokens, logitsKept, finished },
        choose,
        stop,
        options.keepLogits ?? false,
      );
      if (step === options.maxNewTokens - 1 || finished.every(Boolean)) break;
      for (const row of mask) row.push(1);
      const deltas = input.ropeDeltas;
      // The fed token sits at cache position T + step (pads counted), + the prompt's rope delta.
      const at = deltas ? Array.from({ length: B }, (_, b) => T + step + deltas[Math.floor(b / G)]) : null;
      values = decode({
        ...(at ? { mropePositions: [...at, ...at, ...at] } : {}),
        embeds: embedIds(
          model.decoder,
          next.map((id) => [id]),
        ),
        rows: B,
        seq: 1,
        attentionMask: mask,
        logitRows: [0],
      }); // [B, 1, V]
      rowOf = (b: number) => b;
    }
  } finally {
    end();
  }
  return { tokens, finished, ...(options.keepLogits ? { logits: logitsKept } : {}) };
}
