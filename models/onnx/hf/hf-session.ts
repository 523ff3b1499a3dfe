// A Hugging Face decoder on ONNX Runtime: the session of models/onnx/hf/hf-graph.ts and
// the feeds it needs, computed in TS by the functions the tfjs forward uses (positions from the attention mask as
// generate() makes them, layers/rope.ts ropeValues, layers/attention.ts maskValues), so both engines see the same
// numbers. LoRA A/B are fed (syncLora reads the learner's variables; B = 0 gives the base for the reference policy);
// a session is rebuilt only when the set of adapted modules or their ranks change (a different adapter loaded).
// On WebGPU the KV caches and the adapters stay on the GPU between runs (device-tensors.ts): the caches are the graph's
// present_* outputs bound to GPU buffers and fed back as past_*, a prompt cache is repeated for its G rows there, and
// the adapters are uploaded once per update; a cache is freed with releaseCache() when its holder is done with it.
// On the host the graph is hf-graph.ts's host variant: a run returns the new positions' keys and values, and a
// decoding loop writes them into a HostCache (host-cache.ts) that the next step reads in place (decodeStep).
// Generation and scoring on top of it live in models/onnx/hf/hf-sampler.ts.
import type { Tensor } from 'onnxruntime-common';
import type { DecoderConfig } from '../../hf/config.ts';
import { positionsFromMask, type HfDecoder } from '../../hf/decoder.ts';
import { maskValues } from '../../layers/attention.ts';
import { mropeValues } from '../../layers/mrope.ts';
import { inverseFrequencies, ropeValues } from '../../layers/rope.ts';
import { DeviceTensors, keepsTensorsOnDevice, keptLocation, zeros } from '../device-tensors.ts';
import { buildHfDecoderGraph, loraInput, type HfLoraSpec } from './hf-graph.ts';
import type { HostCache } from './host-cache.ts';
import { OrtSession, floatTensor, int64Tensor, type Feeds, type SessionOptions } from '../session.ts';
import { weightFileOf } from '../weight-file.ts';
import type { WeightDtype } from '../weight-encoding.ts';

/** Keys (RoPE applied) and values of every cached position, per layer [B, nkv, length, d]: on the host, or on the device. */
export interface HfOrtCache {
  rows: number;
  length: number;
  k: Tensor[];
  v: Tensor[];
}

export interface HfRunRequest {
  /** Embeddings [rows · seq · H] (HfDecoder.embed or with image features merged). */
  embeds: Float32Array;
  rows: number;
  seq: number;
  /** [rows][past + seq]: 1 on real tokens, 0 on padding. */
  attentionMask: ArrayLike<number>[];
  /** RoPE positions [rows][seq]; default from the mask (cumsum - 1, pads at 1), as the tfjs forward does. */
  positionIds?: ArrayLike<number>[];
  /** Gemma 3 image blocks of a prefill ([rows][seq], 1 on image tokens). */
  tokenTypeIds?: ArrayLike<number>[];
  /** Multimodal RoPE (a config with `mrope`): [3, rows · seq] axis-major; absent: every axis takes positionIds. */
  mropePositions?: ArrayLike<number>;
  /** Qwen3-VL DeepStack of a prefill: features [M, H] per layer j added to rows `rows` (b · seq + t); absent: none. */
  deepstack?: { rows: Int32Array; features: Float32Array[] };
  cache: HfOrtCache | null;
  /** Positions along seq whose logits are wanted (default: all). */
  logitRows?: number[];
  useLora: boolean;
  /** Host caches: false when the run's cache is not wanted (scoring): its keys and values are not fetched. */
  keepCache?: boolean;
}

export interface HfRunResult {
  /** [rows, logitRows, V]. */
  logits: Float32Array;
  /** The cache extended by this pass. */
  cache: HfOrtCache;
}

/** [B, nkv, P, d] ++ [B, nkv, S, d] along positions: each (row, head) block is P·d old values then S·d new. */
function appendPositions(old: Tensor, added: Tensor): Tensor {
  const [B, nkv, P, d] = old.dims as number[];
  const S = added.dims[2] as number;
  const from = old.data as Float32Array;
  const add = added.data as Float32Array;
  const out = new Float32Array(B * nkv * (P + S) * d);
  for (let bh = 0; bh < B * nkv; bh++) {
    out.set(from.subarray(bh * P * d, (bh + 1) * P * d), bh * (P + S) * d);
    out.set(add.subarray(bh * S * d, (bh + 1) * S * d), (bh * (P + S) + P) * d);
  }
  return floatTensor(out, [B, nkv, P + S, d]);
}

/** Shared weights up to this size are also prepacked by the sampler's session (a second, packed copy): 1 GiB. */
const PREPACK_MAX_BYTES = 2 ** 30;

export class HfOrtModel {
  private session: OrtSession;
  private spec: HfLoraSpec;
  private loraFeeds: Record<string, Tensor> = {};
  private baseFeeds: Record<string, Tensor> = {};
  private readonly invGlobal: Float32Array;
  private readonly invLocal: Float32Array | null;
  /** Set when caches and adapters stay on the device between runs (WebGPU; tests: the CPU through the same path). */
  private readonly kept: DeviceTensors | null;

  constructor(
    readonly decoder: HfDecoder,
    /**
     * Session options; the stored type of the weights (weight-dtype.ts, default float32); and (tests) the weight bytes
     * past which the graph keeps them in an external data file of its own instead of the shared one. `keepOnDevice`
     * (default: on WebGPU) keeps caches and adapters where the session computes; tests set it on the CPU.
     */
    private readonly options: SessionOptions & {
      maxInlineBytes?: number;
      stored?: WeightDtype;
      keepOnDevice?: boolean;
    } = {},
  ) {
    const c = decoder.config;
    const { device, threads, spin } = options;
    this.kept =
      (options.keepOnDevice ?? keepsTensorsOnDevice(device))
        ? new DeviceTensors({ device, threads, spin }, keptLocation(device))
        : null;
    this.invGlobal = inverseFrequencies(c.headDim, c.ropeTheta, c.ropeLinearFactor);
    this.invLocal = c.ropeLocalTheta !== null ? inverseFrequencies(c.headDim, c.ropeLocalTheta) : null;
    this.spec = this.currentSpec();
    this.session = this.open();
    this.readLora();
  }

  get config(): DecoderConfig {
    return this.decoder.config;
  }

  /** Whether KV caches live on the host (then decoding loops keep them in a HostCache: decodeStep). */
  get hostCaches(): boolean {
    return this.kept === null;
  }

  /** Whether the graph has LoRA inputs (adapters were attached when it was built). */
  get hasLora(): boolean {
    return this.spec.size > 0;
  }

  private currentSpec(): Map<string, number> {
    const spec = new Map<string, number>();
    for (const [module, l] of this.decoder.linears()) if (l.lora) spec.set(module, l.lora.a.shape[1] as number);
    return spec;
  }

  private open(): OrtSession {
    const { maxInlineBytes, stored, keepOnDevice: _, ...options } = this.options;
    const label = `${this.config.family} decoder`;
    const location = this.kept?.location;
    const sixteenBit = stored !== undefined && stored !== 'float32';
    const session: SessionOptions = {
      ...options,
      sixteenBit,
      ...(location ? { outputLocations: this.cacheLocations(location) } : {}),
    };
    const hostCaches = !this.kept;
    if (maxInlineBytes !== undefined)
      return new OrtSession(
        buildHfDecoderGraph(this.config, this.decoder.weights, this.spec, { maxInlineBytes, stored, hostCaches }),
        { label, ...session },
      );
    // The decoder's shared weight file, mapped by the learner's session too. Prepacking makes a packed copy of every
    // weight for ORT's GEMMs: worth it for a small model (docs/hugging-face.md has the timing), not for one whose
    // weights are what stops it fitting (PREPACK_MAX_BYTES).
    const shared = weightFileOf(this.decoder, label);
    const graph = buildHfDecoderGraph(this.config, this.decoder.weights, this.spec, { shared, stored, hostCaches });
    return new OrtSession(graph, { label, prepack: shared.bytes <= PREPACK_MAX_BYTES, ...session });
  }

  /** Read the decoder's current adapters (after every learner update, or a loaded adapter). */
  syncLora(): void {
    const now = this.currentSpec();
    const same = now.size === this.spec.size && [...now].every(([m, r]) => this.spec.get(m) === r);
    if (!same) {
      this.session.dispose();
      this.spec = now;
      this.session = this.open();
    }
    this.readLora();
  }

  /** The decoder's outputs bound by IO binding: the caches at `location`, the logits on the host. */
  private cacheLocations(location: 'cpu' | 'gpu-buffer'): Record<string, 'cpu' | 'gpu-buffer'> {
    const out: Record<string, 'cpu' | 'gpu-buffer'> = { logits: 'cpu' };
    for (let i = 0; i < this.config.numLayers; i++) out[`present_key.${i}`] = out[`present_value.${i}`] = location;
    return out;
  }

  private readLora(): void {
    const previous = new Set([...Object.values(this.loraFeeds), ...Object.values(this.baseFeeds)]);
    this.loraFeeds = {};
    this.baseFeeds = {};
    for (const [module, l] of this.decoder.linears()) {
      if (!l.lora || !this.spec.has(module)) continue;
      const [inDim, r] = l.lora.a.shape as [number, number];
      const outDim = l.lora.b.shape[1] as number;
      const scale = l.lora.scale;
      // A pre-multiplied by alpha / r: x (s·A) B is the tfjs (x A) B · s up to float rounding.
      const a = floatTensor(
        Float32Array.from(l.lora.a.dataSync() as Float32Array, (x) => x * scale),
        [inDim, r],
      );
      this.loraFeeds[loraInput(module, 'a')] = a;
      this.loraFeeds[loraInput(module, 'b')] = floatTensor((l.lora.b.dataSync() as Float32Array).slice(), [r, outDim]);
      this.baseFeeds[loraInput(module, 'a')] = a;
      this.baseFeeds[loraInput(module, 'b')] = zeros([r, outDim]);
    }
    if (this.kept) {
      // One upload of every adapter (and the reference's B = 0) per update; the previous ones are freed.
      this.kept.release(previous);
      const names = [
        ...Object.keys(this.loraFeeds).map((n) => ['lora', n] as const),
        ...Object.keys(this.baseFeeds)
          .filter((n) => n.endsWith('.b'))
          .map((n) => ['base', n] as const),
      ];
      const onDevice = this.kept.upload(names.map(([set, n]) => (set === 'lora' ? this.loraFeeds : this.baseFeeds)[n]));
      names.forEach(([set, n], i) => ((set === 'lora' ? this.loraFeeds : this.baseFeeds)[n] = onDevice[i]));
      for (const n of Object.keys(this.baseFeeds)) if (n.endsWith('.a')) this.baseFeeds[n] = this.loraFeeds[n];
    }
  }

  /** An empty cache for `rows` rows. */
  emptyCache(rows: number): HfOrtCache {
    const L = this.config.numLayers;
    const dims = [rows, this.config.numKvHeads, 0, this.config.headDim];
    return {
      rows,
      length: 0,
      k: Array.from({ length: L }, () => zeros(dims)),
      v: Array.from({ length: L }, () => zeros(dims)),
    };
  }

  run(req: HfRunRequest): HfRunResult {
    const c = this.config;
    const cache = req.cache ?? this.emptyCache(req.rows);
    if (cache.rows !== req.rows) throw new Error(`HfOrtModel.run: cache of ${cache.rows} rows for ${req.rows} rows`);
    const { rows, shared } = this.rowFeeds(req, cache.length);
    const feeds: Record<string, Tensor> = { ...rows, ...shared, ...(req.useLora ? this.loraFeeds : this.baseFeeds) };
    for (let i = 0; i < c.numLayers; i++) {
      feeds[`past_key.${i}`] = cache.k[i];
      feeds[`past_value.${i}`] = cache.v[i];
    }
    if (!this.kept) {
      // The host graph returns the new positions alone; the cache out is the past with them appended (a copy, which
      // a prefill's empty past makes free; decoding loops use decodeStep instead).
      const out = this.session.run(feeds, this.hostOutputs(req.keepCache ?? true));
      const logits = out.logits.data as Float32Array;
      if (req.keepCache === false) return { logits, cache: this.emptyCache(0) };
      const added = (kind: 'key' | 'value') => Array.from({ length: c.numLayers }, (_, i) => out[`new_${kind}.${i}`]);
      const [newK, newV] = [added('key'), added('value')];
      if (cache.length === 0) return { logits, cache: { rows: req.rows, length: req.seq, k: newK, v: newV } };
      return {
        logits,
        cache: {
          rows: req.rows,
          length: cache.length + req.seq,
          k: cache.k.map((t, i) => appendPositions(t, newK[i])),
          v: cache.v.map((t, i) => appendPositions(t, newV[i])),
        },
      };
    }
    const out = this.session.run(feeds);
    return {
      logits: out.logits.data as Float32Array,
      cache: {
        rows: req.rows,
        length: cache.length + req.seq,
        k: Array.from({ length: c.numLayers }, (_, i) => out[`present_key.${i}`]),
        v: Array.from({ length: c.numLayers }, (_, i) => out[`present_value.${i}`]),
      },
    };
  }

  /** What a host run fetches: the logits, and the new keys and values unless the cache is not wanted. */
  private hostOutputs(withCache: boolean): string[] {
    const names = ['logits'];
    if (withCache) for (let i = 0; i < this.config.numLayers; i++) names.push(`new_key.${i}`, `new_value.${i}`);
    return names;
  }

  /**
   * One decoding step on the host: the request's rows are the cache's, its mask covers the cache's filled positions
   * and the new ones; the new keys and values are written into `cache`. Returns the logits [rows, logitRows, V].
   */
  decodeStep(req: Omit<HfRunRequest, 'cache' | 'keepCache'>, cache: HostCache): Float32Array {
    if (this.kept) throw new Error('internal: HfOrtModel.decodeStep with caches on the device');
    if (cache.rows !== req.rows) throw new Error(`HfOrtModel.decodeStep: cache of ${cache.rows} rows for ${req.rows}`);
    const { rows, shared } = this.rowFeeds(req, cache.length);
    const feeds: Feeds = { ...rows, ...shared, ...(req.useLora ? this.loraFeeds : this.baseFeeds) };
    feeds.mask = cache.layOut(rows.mask);
    if (rows.mask_sliding) feeds.mask_sliding = cache.layOut(rows.mask_sliding);
    const L = this.config.numLayers;
    for (let i = 0; i < L; i++) {
      const past = cache.past(i);
      feeds[`past_key.${i}`] = past.k;
      feeds[`past_value.${i}`] = past.v;
    }
    const out = this.session.run(feeds, this.hostOutputs(true));
    cache.write(
      Array.from({ length: L }, (_, i) => out[`new_key.${i}`]),
      Array.from({ length: L }, (_, i) => out[`new_value.${i}`]),
    );
    return out.logits.data as Float32Array;
  }

  /**
   * A run's inputs but the caches and adapters, after `past` cached positions: `rows`, whose first dimension is the
   * request's rows (embeddings, masks, RoPE values, DeepStack), and `shared` (logit_rows).
   */
  private rowFeeds(req: Omit<HfRunRequest, 'cache' | 'useLora'>, past: number): { rows: Feeds; shared: Feeds } {
    const c = this.config;
    const { rows: B, seq: S } = req;
    const K = past + S;
    if (req.attentionMask.length !== B || req.attentionMask.some((r) => r.length !== K))
      throw new Error(`HfOrtModel.run: attention mask must be [${B}, ${K}]`);
    const maskRows = req.attentionMask.map((r) => Array.from(r));
    const given = req.positionIds ?? positionsFromMask(req.attentionMask).map((r) => r.subarray(past));
    const positions = new Int32Array(B * S);
    given.forEach((row, b) => {
      for (let t = 0; t < S; t++) positions[b * S + t] = row[t];
    });
    const d = c.headDim;
    const tokenTypeIds = req.tokenTypeIds?.map((r) => Array.from(r));
    const logitRows = req.logitRows ?? Array.from({ length: S }, (_, t) => t);
    const feeds: Record<string, Tensor> = {
      inputs_embeds: floatTensor(req.embeds, [B, S, c.hiddenSize]),
      mask: floatTensor(
        maskValues({ batch: B, queries: S, past, attentionMask: maskRows, window: null, tokenTypeIds }),
        [B, 1, S, K],
      ),
    };
    if (req.mropePositions && req.mropePositions.length !== 3 * B * S)
      throw new Error(`HfOrtModel.run: mropePositions must be [3, ${B * S}]`);
    const global =
      c.mrope && req.mropePositions
        ? mropeValues(Int32Array.from(req.mropePositions), { ...c.mrope, headDim: d, theta: c.ropeTheta })
        : ropeValues(positions, this.invGlobal);
    feeds.rope_cos = floatTensor(global.cos, [B, S, 1, d]);
    feeds.rope_sin = floatTensor(global.sin, [B, S, 1, d]);
    if (this.invLocal) {
      const local = ropeValues(positions, this.invLocal);
      feeds.rope_cos_local = floatTensor(local.cos, [B, S, 1, d]);
      feeds.rope_sin_local = floatTensor(local.sin, [B, S, 1, d]);
    }
    if (c.layerTypes.includes('sliding_attention')) {
      feeds.mask_sliding = floatTensor(
        maskValues({ batch: B, queries: S, past, attentionMask: maskRows, window: c.slidingWindow, tokenTypeIds }),
        [B, 1, S, K],
      );
    }
    const H = c.hiddenSize;
    for (let j = 0; j < c.deepstackLayers; j++) {
      // Dense [B, S, H]: zeros but at the image tokens' rows (decoding steps and text prompts: all zeros).
      const dense = new Float32Array(B * S * H);
      const features = req.deepstack?.features[j];
      if (features) req.deepstack!.rows.forEach((row, k) => dense.set(features.subarray(k * H, (k + 1) * H), row * H));
      feeds[`deepstack.${j}`] = floatTensor(dense, [B, S, H]);
    }
    return { rows: feeds, shared: { logit_rows: int64Tensor(logitRows, [logitRows.length]) } };
  }

  /** Rows of a cache repeated: row b becomes rows b·G … b·G + G - 1 (generate()'s repeatCache), where the cache is. */
  repeatCache(cache: HfOrtCache, group: number): HfOrtCache {
    const rows = cache.rows * group;
    if (this.kept) {
      const picked = this.kept.gatherRows(
        [...cache.k, ...cache.v],
        Array.from({ length: rows }, (_, i) => Math.floor(i / group)),
      );
      const L = cache.k.length;
      return { rows, length: cache.length, k: picked.slice(0, L), v: picked.slice(L) };
    }
    const rep = (t: Tensor) => {
      const data = t.data as Float32Array;
      const per = data.length / cache.rows;
      const out = new Float32Array(data.length * group);
      for (let b = 0; b < cache.rows; b++)
        for (let g = 0; g < group; g++) out.set(data.subarray(b * per, (b + 1) * per), (b * group + g) * per);
      return floatTensor(out, [rows, ...t.dims.slice(1)]);
    };
    return { rows, length: cache.length, k: cache.k.map(rep), v: cache.v.map(rep) };
  }

  /** Free a cache kept on the device (a no-op on the host path); its holder must not use it again. */
  releaseCache(cache: HfOrtCache): void {
    this.kept?.release([...cache.k, ...cache.v]);
  }

  dispose(): void {
    this.kept?.release([...Object.values(this.loraFeeds), ...Object.values(this.baseFeeds)]);
    this.kept?.dispose();
    this.session.dispose();
  }
}
