// A Hugging Face decoder on ONNX Runtime: the session of models/onnx/hf/hf-graph.ts and
// the feeds it needs, computed in TS by the functions the tfjs forward uses (positions from the attention mask as
// generate() makes them, layers/rope.ts ropeValues, layers/attention.ts maskValues), so both engines see the same
// numbers. LoRA A/B are fed (syncLora reads the learner's variables; B = 0 gives the base for the reference policy);
// a session is rebuilt only when the set of adapted modules or their ranks change (a different adapter loaded).
// On WebGPU the KV caches and the adapters stay on the GPU between runs (device-tensors.ts): the caches are the graph's
// present_* outputs bound to GPU buffers and fed back as past_*, a prompt cache is repeated for its G rows there, and
// the adapters are uploaded once per update; a cache is freed with releaseCache() when its holder is done with it.
// Generation and scoring on top of it live in models/onnx/hf/hf-sampler.ts.
import type { Tensor } from 'onnxruntime-common';
import type { DecoderConfig } from '../../hf/config.ts';
import { positionsFromMask, type HfDecoder } from '../../hf/decoder.ts';
import { maskValues } from '../../layers/attention.ts';
import { mropeValues } from '../../layers/mrope.ts';
import { inverseFrequencies, ropeValues } from '../../layers/rope.ts';
import { DeviceTensors, keepsTensorsOnDevice, keptLocation, zeros } from '../device-tensors.ts';
import { buildHfDecoderGraph, loraInput, type HfLoraSpec } from './hf-graph.ts';
import { HostCacheRing } from './host-cache-ring.ts';
import { OrtSession, floatTensor, int64Tensor, type SessionOptions } from '../session.ts';
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
  /**
   * A decoding loop's ring (host caches only, see hostCacheRing): the run fetches the new positions' keys and values
   * alone and the returned cache is the ring's append of them to `cache`.
   */
  appendInto?: HostCacheRing;
}

export interface HfRunResult {
  /** [rows, logitRows, V]. */
  logits: Float32Array;
  /** The cache extended by this pass. */
  cache: HfOrtCache;
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

  /** A ring for a decoding loop's caches when they live on the host; null when they stay on the device. */
  hostCacheRing(): HostCacheRing | null {
    return this.kept ? null : new HostCacheRing();
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
    if (maxInlineBytes !== undefined)
      return new OrtSession(
        buildHfDecoderGraph(this.config, this.decoder.weights, this.spec, {
          maxInlineBytes,
          stored,
          newPositionOutputs: !this.kept,
        }),
        { label, ...session },
      );
    // The decoder's shared weight file, mapped by the learner's session too. Prepacking makes a packed copy of every
    // weight for ORT's GEMMs: worth it for a small model (docs/hugging-face.md has the timing), not for one whose
    // weights are what stops it fitting (PREPACK_MAX_BYTES).
    const shared = weightFileOf(this.decoder, label);
    const graph = buildHfDecoderGraph(this.config, this.decoder.weights, this.spec, {
      shared,
      stored,
      newPositionOutputs: !this.kept,
    });
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
    const { rows: B, seq: S } = req;
    const cache = req.cache ?? this.emptyCache(B);
    const past = cache.length;
    const K = past + S;
    if (cache.rows !== B) throw new Error(`HfOrtModel.run: cache of ${cache.rows} rows for ${B} rows`);
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
      logit_rows: int64Tensor(logitRows, [logitRows.length]),
      ...(req.useLora ? this.loraFeeds : this.baseFeeds),
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
    for (let i = 0; i < c.numLayers; i++) {
      feeds[`past_key.${i}`] = cache.k[i];
      feeds[`past_value.${i}`] = cache.v[i];
    }
    const ring = this.kept ? undefined : req.appendInto;
    if (ring) {
      const layers = Array.from({ length: c.numLayers }, (_, i) => i);
      const names = ['logits', ...layers.flatMap((i) => [`new_key.${i}`, `new_value.${i}`])];
      const out = this.session.run(feeds, names);
      return {
        logits: out.logits.data as Float32Array,
        cache: ring.append(
          cache,
          layers.map((i) => out[`new_key.${i}`]),
          layers.map((i) => out[`new_value.${i}`]),
        ),
      };
    }
    const out = this.session.run(feeds);
    return {
      logits: out.logits.data as Float32Array,
      cache: {
        rows: B,
        length: K,
        k: Array.from({ length: c.numLayers }, (_, i) => out[`present_key.${i}`]),
        v: Array.from({ length: c.numLayers }, (_, i) => out[`present_value.${i}`]),
      },
    };
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
