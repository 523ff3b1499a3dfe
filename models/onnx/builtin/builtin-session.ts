// The built-in model on ONNX Runtime: the sessions of models/onnx/builtin/builtin-graph.ts
// (general: prefill, scoring, full forward; decode: one token per row) and the feeds they need, computed in TS exactly
// as the tfjs forward computes them (RoPE tables from positions.ts positions, patch placement, additive attention
// masks). The projection weights are fed, base or LoRA-merged (syncLora), so an update never rebuilds a session.
// Generation and scoring on top of it live in models/onnx/builtin/builtin-sampler.ts.
import type { Tensor } from 'onnxruntime-common';
import { headDim, patchDim, patchesPerImage, type Architecture } from '../../builtin/config.ts';
import type { ModelWeights, Projection } from '../../builtin/weights.ts';
import type { LoraSet } from '../../builtin/lora.ts';
// RoPE cos/sin come from the tfjs forward's own tables (rope.ts, no tfjs: worker threads load this), so both engines
// rotate identically.
import { NEG, ropeValues } from '../../builtin/rope.ts';
import { queryScale } from '../../builtin/model-ops.ts';
import { buildBuiltinGraph, joinQkv, loraInputName, loraSpec, QKV, type LoraSpec } from './builtin-graph.ts';
import { OrtSession, floatTensor, int64Tensor } from '../session.ts';
import type { Device } from '../device.ts';

/** Keys (RoPE applied) and values per layer: k and v [n, H, len, dh], n = prompts or rows. */
export interface KVCache {
  count: number;
  length: number;
  k: Float32Array[];
  v: Float32Array[];
}

/** One image occurrence in the batch: patch rows `row * S + start …` take the patches of `image`. */
export interface PatchSlot {
  row: number;
  start: number;
  image: Float32Array;
}

export interface ForwardRequest {
  rows: number;
  seq: number;
  /** [rows * seq] token ids and RoPE positions. */
  tokens: Int32Array;
  positions: Int32Array;
  slots?: PatchSlot[];
  /** Shared prompt cache (rows = prompt.count · G, rows of one prompt consecutive) and its valid length per row. */
  prompt?: { cache: KVCache; valid: ArrayLike<number> };
  useLora: boolean;
}

export interface ForwardResult {
  /** [rows, seq, vocab]. */
  logits: Float32Array;
  /** Per layer this call's keys (RoPE applied) and values, [rows, H, seq, dh]. */
  keys: Float32Array[];
  values: Float32Array[];
}

/**
 * One decoding step of U·G rows (G consecutive rows per prompt), one token each. The own cache is laid out group-major,
 * k and v [U, H, G, capacity, dh] (the caller writes each step's keys into it), with the first `filled` positions
 * valid for every row.
 */
export interface DecodeRequest {
  group: number;
  tokens: Int32Array;
  positions: Int32Array;
  prompt: { cache: KVCache; valid: ArrayLike<number> };
  own: { k: Float32Array[]; v: Float32Array[]; capacity: number; filled: number };
  useLora: boolean;
}

export interface DecodeResult {
  /** [U·G, vocab], rows u·G + g. */
  logits: Float32Array;
  /** Per layer this step's keys (RoPE applied) and values, [U, H, G, dh]. */
  keys: Float32Array[];
  values: Float32Array[];
}

/** The serialised graphs of a model's sessions (general with LoRA inputs, its LoRA-free twin or null, decoder). */
export interface BuiltinGraphs {
  general: Uint8Array;
  generalBase: Uint8Array | null;
  decoder: Uint8Array;
}

/** A model's graphs built elsewhere (a worker opens the main thread's). */
export interface PrebuiltModel {
  arch: Architecture;
  spec: LoraSpec | null;
  graphs: BuiltinGraphs;
}

/** Adapter feeds as plain arrays (they cross threads). */
export interface LoraValues {
  feeds: Record<string, { data: Float32Array; dims: number[] }>;
  zeros: Record<string, { data: Float32Array; dims: number[] }>;
}

/**
 * The graphs for `device`. On WebGPU the general graph's attention is plain ops: ORT's WebGPU MultiHeadAttention
 * gave wrong rows (attention outputs off by up to 0.3, logits by 2.5) when the keys outnumber the queries, as the
 * prompt cache's row makes them in every prefill (found on lavapipe; ORT's WebGPU MultiHeadAttention has had such
 * fixes upstream, microsoft/onnxruntime#26766 and #27791). The CPU and CUDA keep the fused node.
 */
function builtinGraphs(
  model: { arch: Architecture; weights: ModelWeights; lora: LoraSet | null },
  device: Device | undefined,
): BuiltinGraphs {
  const spec = loraSpec(model.lora?.config ?? null);
  const general = { fusedAttention: device !== 'webgpu' };
  return {
    general: buildBuiltinGraph(model.arch, model.weights, spec, 'general', general),
    generalBase: spec ? buildBuiltinGraph(model.arch, model.weights, null, 'general', general) : null,
    decoder: buildBuiltinGraph(model.arch, model.weights, spec, 'decode'),
  };
}

export interface BuiltinOrtOptions {
  threads?: number;
  spin?: boolean;
  device?: Device;
}

/**
 * [cos | cos] and [sin | sin] per position ([n, 2d]: the tables of the joined q/k RoPE, see builtin-graph.ts), each
 * position's row computed once by ropeValues and kept (decoding asks for a few new positions per step).
 */
class RopeRows {
  private readonly rows = new Map<number, Float32Array>();
  constructor(private readonly arch: Architecture) {}

  feeds(positions: Int32Array, rows: number, seq: number): { rope_cos: Tensor; rope_sin: Tensor } {
    const d2 = 2 * this.arch.dModel;
    const n = positions.length;
    const missing = Int32Array.from(new Set(Array.from(positions).filter((p) => !this.rows.has(p))));
    if (missing.length > 0) {
      const { cos, sin } = ropeValues(this.arch, missing);
      const d = this.arch.dModel;
      missing.forEach((p, i) => {
        const row = new Float32Array(2 * d2); // [cos | cos | sin | sin]
        const c = cos.subarray(i * d, (i + 1) * d);
        const s = sin.subarray(i * d, (i + 1) * d);
        row.set(c, 0);
        row.set(c, d);
        row.set(s, 2 * d);
        row.set(s, 3 * d);
        this.rows.set(p, row);
      });
    }
    const cos2 = new Float32Array(n * d2);
    const sin2 = new Float32Array(n * d2);
    for (let i = 0; i < n; i++) {
      const row = this.rows.get(positions[i])!;
      cos2.set(row.subarray(0, d2), i * d2);
      sin2.set(row.subarray(d2), i * d2);
    }
    return { rope_cos: floatTensor(cos2, [rows, seq, d2]), rope_sin: floatTensor(sin2, [rows, seq, d2]) };
  }
}

/** An empty cache of one masked zero position (the graph never sees a zero-sized dimension). */
function emptyCache(arch: Architecture, count: number, length = 1): KVCache {
  const n = count * arch.nHeads * headDim(arch) * length;
  return {
    count,
    length,
    k: Array.from({ length: arch.nLayers }, () => new Float32Array(n)),
    v: Array.from({ length: arch.nLayers }, () => new Float32Array(n)),
  };
}

export class BuiltinOrtModel {
  readonly arch: Architecture;
  private readonly spec: LoraSpec | null;
  /** General graph with LoRA inputs (or the base model's when there is no LoRA), its LoRA-free twin, the decoder. */
  private readonly general: OrtSession;
  private readonly generalBase: OrtSession;
  private readonly decoder: OrtSession;
  private readonly graphs: BuiltinGraphs;
  /** Current adapter values (fed to every call with LoRA) and zeros of the B shapes (the reference policy). */
  private loraFeeds: Record<string, Tensor> = {};
  private zeroB: Record<string, Tensor> = {};
  private readonly rope: RopeRows;
  /** The last decode step's mask and what it was built for (see decodeStep). */
  private decodeMask: {
    bias: Float32Array;
    B: number;
    P: number;
    T: number;
    valid: ArrayLike<number>;
    filled: number;
  } | null = null;

  constructor(
    model: { arch: Architecture; weights: ModelWeights; lora: LoraSet | null } | PrebuiltModel,
    options: BuiltinOrtOptions = {},
  ) {
    this.arch = model.arch;
    const prebuilt = 'graphs' in model ? model : null;
    this.spec = prebuilt ? prebuilt.spec : loraSpec((model as { lora: LoraSet | null }).lora?.config ?? null);
    this.graphs = prebuilt
      ? prebuilt.graphs
      : builtinGraphs(model as { arch: Architecture; weights: ModelWeights; lora: LoraSet | null }, options.device);
    this.rope = new RopeRows(model.arch);
    const open = (bytes: Uint8Array, mode: 'general' | 'decode') =>
      new OrtSession(bytes, {
        threads: options.threads,
        spin: options.spin,
        device: options.device,
        label: `built-in model (${mode})`,
      });
    this.general = open(this.graphs.general, 'general');
    this.generalBase = this.graphs.generalBase ? open(this.graphs.generalBase, 'general') : this.general;
    this.decoder = open(this.graphs.decoder, 'decode');
    const lora = prebuilt ? null : (model as { lora: LoraSet | null }).lora;
    if (lora) this.syncLora(lora);
  }

  /** What a worker needs to open the same sessions (models/onnx/builtin/worker-pool.ts). */
  get prebuilt(): PrebuiltModel {
    return { arch: this.arch, spec: this.spec, graphs: this.graphs };
  }

  get hasLora(): boolean {
    return this.spec !== null;
  }

  /** Read the adapters' current values (after each learner update); no session is rebuilt. */
  syncLora(lora: LoraSet): void {
    this.setLora(this.loraValues(lora));
  }

  /** The adapter values fed now (null before any), for a worker's copy of the model. */
  lora: LoraValues | null = null;

  /** Adapter feeds as computed by loraValues (a worker's copy of the model takes them from the main thread). */
  setLora(values: LoraValues): void {
    this.lora = values;
    const wrap = (m: Record<string, { data: Float32Array; dims: number[] }>) =>
      Object.fromEntries(Object.entries(m).map(([k, t]) => [k, floatTensor(t.data, t.dims)]));
    this.loraFeeds = wrap(values.feeds);
    this.zeroB = wrap(values.zeros);
  }

  /** The adapters' feeds for the graphs (A scaled, q/k/v joined) and zeros of the B shapes (the reference policy). */
  loraValues(lora: LoraSet): LoraValues {
    const spec = this.spec;
    if (!spec) throw new Error('the ONNX graph was built without LoRA inputs');
    if (
      lora.config.r !== spec.r ||
      lora.scale !== spec.scale ||
      lora.config.targetModules.join() !== spec.targets.join()
    ) {
      throw new Error('LoRA settings differ from those the ONNX graph was built for');
    }
    const { r, scale } = spec;
    const d = this.arch.dModel;
    const feeds: LoraValues['feeds'] = {};
    const zeros: LoraValues['zeros'] = {};
    const put = (
      layer: number,
      name: Projection | 'qkv',
      a: Float32Array,
      aDims: number[],
      b: Float32Array,
      bDims: number[],
    ) => {
      feeds[loraInputName(layer, name, 'a')] = { data: a, dims: aDims };
      feeds[loraInputName(layer, name, 'b')] = { data: b, dims: bDims };
      zeros[loraInputName(layer, name, 'b')] = { data: new Float32Array(b.length), dims: bDims };
    };
    lora.layers.forEach((adapters, i) => {
      // q, k, v: A' = scale·[Aq | Ak | Av] [d, 3r]; B' [3r, 5d] in the joined weight's column layout (builtin-graph.ts);
      // absent adapters stay zero.
      if (QKV.some((p) => spec.targets.includes(p))) {
        const a = new Float32Array(d * 3 * r);
        const b = new Float32Array(3 * r * 5 * d);
        const none = new Float32Array(r * d);
        QKV.forEach((p, j) => {
          const adapter = adapters[p];
          if (!adapter) return;
          const av = adapter.a.dataSync() as Float32Array; // [d, r]
          const bv = adapter.b.dataSync() as Float32Array; // [r, d]
          for (let row = 0; row < d; row++)
            for (let c = 0; c < r; c++) a[row * 3 * r + j * r + c] = scale * av[row * r + c];
          const blocks = QKV.map((_, k) => (k === j ? bv : none));
          b.set(joinQkv(this.arch, blocks[0], blocks[1], blocks[2], r, queryScale(this.arch)), j * r * 5 * d);
        });
        put(i, 'qkv', a, [d, 3 * r], b, [3 * r, 5 * d]);
      }
      for (const p of spec.targets) {
        if ((QKV as readonly string[]).includes(p)) continue;
        const adapter = adapters[p as Projection];
        if (!adapter) throw new Error(`LoRA adapter ${i}.${p} missing`);
        const a = Float32Array.from(adapter.a.dataSync() as Float32Array, (x) => scale * x);
        put(i, p, a, adapter.a.shape, Float32Array.from(adapter.b.dataSync() as Float32Array), adapter.b.shape);
      }
    });
    return { feeds, zeros };
  }

  /** One pass of the general graph: S tokens per row after an optional shared prompt cache. */
  forward(req: ForwardRequest): ForwardResult {
    const { arch } = this;
    const { rows: B, seq: S } = req;
    const H = arch.nHeads;
    const dh = headDim(arch);
    const prompt = req.prompt ?? { cache: emptyCache(arch, B), valid: new Int32Array(B) };
    const U = prompt.cache.count;
    const G = B / U;
    if (!Number.isInteger(G)) throw new Error(`${B} rows do not split into ${U} prompt groups`);
    const P = prompt.cache.length;
    const K = P + S;

    // Additive mask [B, 1, S, K]: prompt keys below the row's valid length, new keys causally.
    const bias = new Float32Array(B * S * K).fill(NEG);
    for (let r = 0; r < B; r++) {
      for (let i = 0; i < S; i++) {
        const o = (r * S + i) * K;
        bias.fill(0, o, o + prompt.valid[r]);
        bias.fill(0, o + P, o + P + i + 1);
      }
    }
    // Patches: distinct images projected once, each patch row placed by index (0 = none).
    const p = patchesPerImage(arch);
    const images: Float32Array[] = [];
    const imageIndex = new Map<Float32Array, number>();
    const patchIndex = new Int32Array(B * S);
    for (const slot of req.slots ?? []) {
      let index = imageIndex.get(slot.image);
      if (index === undefined) {
        index = images.length;
        images.push(slot.image);
        imageIndex.set(slot.image, index);
      }
      for (let j = 0; j < p; j++) patchIndex[slot.row * S + slot.start + j] = 1 + index * p + j;
    }
    const patchCount = Math.max(1, images.length * p);
    const pixels = new Float32Array(patchCount * patchDim(arch));
    images.forEach((im, i) => pixels.set(im, i * p * patchDim(arch)));
    const patchSlots = Int32Array.from({ length: patchCount }, (_, i) => i % p);

    const feeds: Record<string, Tensor> = {
      ...(this.spec && req.useLora ? this.loraFeeds : {}),
      ...this.rope.feeds(req.positions, B, S),
      input_ids: int64Tensor(req.tokens, [B, S]),
      patch_pixels: floatTensor(pixels, [patchCount, patchDim(arch)]),
      patch_slots: int64Tensor(patchSlots, [patchCount]),
      patch_index: int64Tensor(patchIndex, [B, S]),
      attn_bias: floatTensor(bias, [B, 1, S, K]),
      'shape.u_g_h_p_dh': int64Tensor([U, G, H, P, dh], [5]),
      'shape.b_h_p_dh': int64Tensor([B, H, P, dh], [4]),
    };
    for (let i = 0; i < arch.nLayers; i++) {
      feeds[`prompt_k.${i}`] = floatTensor(prompt.cache.k[i], [U, H, P, dh]);
      feeds[`prompt_v.${i}`] = floatTensor(prompt.cache.v[i], [U, H, P, dh]);
    }
    const out = (this.spec && req.useLora ? this.general : this.generalBase).run(feeds);
    return {
      logits: out.logits.data as Float32Array,
      keys: Array.from({ length: arch.nLayers }, (_, i) => out[`key.${i}`].data as Float32Array),
      values: Array.from({ length: arch.nLayers }, (_, i) => out[`value.${i}`].data as Float32Array),
    };
  }

  /**
   * Completion scoring for one prompt: the prompt (padded, one row) prefilled, then `rows.n` rows of `rows.seq`
   * completion inputs attending to its cache. Returns the logits of the prompt's last token [V] and of the completion
   * rows [n·seq, V] (null when seq is 0).
   */
  scoreGroup(
    prompt: { tokens: Int32Array; positions: Int32Array; slots: PatchSlot[]; length: number; valid: number },
    rows: { n: number; seq: number; tokens: Int32Array; positions: Int32Array },
    useLora: boolean,
  ): { last: Float32Array; rest: Float32Array | null } {
    const V = this.arch.vocabSize;
    const first = this.forward({
      rows: 1,
      seq: prompt.length,
      tokens: prompt.tokens,
      positions: prompt.positions,
      slots: prompt.slots,
      useLora,
    });
    const last = first.logits.slice((prompt.valid - 1) * V, prompt.valid * V);
    if (rows.seq === 0) return { last, rest: null };
    const cache = { count: 1, length: prompt.length, k: first.keys, v: first.values };
    const rest = this.forward({
      rows: rows.n,
      seq: rows.seq,
      tokens: rows.tokens,
      positions: rows.positions,
      useLora,
      prompt: { cache, valid: new Int32Array(rows.n).fill(prompt.valid) },
    }).logits;
    return { last, rest };
  }

  /** One token per row through the decode graph (see DecodeRequest for the cache layout). */
  decodeStep(req: DecodeRequest): DecodeResult {
    const { arch } = this;
    const H = arch.nHeads;
    const dh = headDim(arch);
    const G = req.group;
    const B = req.tokens.length;
    const U = req.prompt.cache.count;
    if (U * G !== B) throw new Error(`${B} rows are not ${U} prompt groups of ${G}`);
    const P = req.prompt.cache.length;
    const T = req.own.capacity;
    const K = P + T + 1;
    // Mask [U, 1, G, K] (rows u·G + g): the prompt's valid keys, the filled own positions, the new key. Kept from the
    // previous step of the same decode (same shapes and prompt lengths), whose mask only lacks the newly filled ones.
    const last = this.decodeMask;
    let bias: Float32Array;
    if (
      last &&
      last.B === B &&
      last.P === P &&
      last.T === T &&
      last.valid === req.prompt.valid &&
      last.filled <= req.own.filled
    ) {
      bias = last.bias;
      for (let r = 0; r < B; r++) bias.fill(0, r * K + P + last.filled, r * K + P + req.own.filled);
    } else {
      bias = new Float32Array(B * K).fill(NEG);
      for (let r = 0; r < B; r++) {
        const o = r * K;
        bias.fill(0, o, o + req.prompt.valid[Math.floor(r / G)]);
        bias.fill(0, o + P, o + P + req.own.filled);
        bias[o + P + T] = 0;
      }
    }
    this.decodeMask = { bias, B, P, T, valid: req.prompt.valid, filled: req.own.filled };
    const feeds: Record<string, Tensor> = {
      ...(this.spec ? { ...this.loraFeeds, ...(req.useLora ? {} : this.zeroB) } : {}),
      ...this.rope.feeds(req.positions, B, 1),
      input_ids: int64Tensor(req.tokens, [B, 1]),
      attn_bias: floatTensor(bias, [U, 1, G, K]),
      'shape.u_g_3h_dh': int64Tensor([U, G, 3 * H, dh], [4]),
      score_splits: int64Tensor([P, T, 1], [3]),
    };
    for (let i = 0; i < arch.nLayers; i++) {
      feeds[`prompt_k.${i}`] = floatTensor(req.prompt.cache.k[i], [U, H, P, dh]);
      feeds[`prompt_v.${i}`] = floatTensor(req.prompt.cache.v[i], [U, H, P, dh]);
      feeds[`own_k.${i}`] = floatTensor(req.own.k[i], [U, H, G, T, dh]);
      feeds[`own_v.${i}`] = floatTensor(req.own.v[i], [U, H, G, T, dh]);
    }
    const out = this.decoder.run(feeds);
    return {
      logits: out.logits.data as Float32Array,
      keys: Array.from({ length: arch.nLayers }, (_, i) => out[`key.${i}`].data as Float32Array),
      values: Array.from({ length: arch.nLayers }, (_, i) => out[`value.${i}`].data as Float32Array),
    };
  }

  dispose(): void {
    this.general.dispose();
    if (this.generalBase !== this.general) this.generalBase.dispose();
    this.decoder.dispose();
  }
}
