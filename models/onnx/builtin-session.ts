// The built-in model on ONNX Runtime (models/ layer, ONNX Runtime engine): the session of models/onnx/builtin-graph.ts
// and the feeds it needs, computed in TS exactly as the tfjs forward computes them (RoPE tables from positions.ts
// positions, patch placement, additive attention masks). One call = one forward of S new tokens for B rows with an
// optional shared prompt cache (per group of rows) and an optional own cache (per row); see builtin-graph.ts for the
// layout. Generation and scoring on top of it live in models/onnx/ort-sampler.ts.
import type { Tensor } from 'onnxruntime-node';
import { headDim, patchDim, patchesPerImage, type Architecture } from '../builtin/config.ts';
import type { ModelWeights, Projection } from '../builtin/weights.ts';
import type { LoraSet } from '../builtin/lora.ts';
import { NEG } from '../builtin/transformer.ts';
import { buildBuiltinGraph, loraSpec, QKV, type BuiltinGraphSpec } from './builtin-graph.ts';
import { OrtSession, floatTensor, int64Tensor } from './session.ts';
import type { Device } from './device.ts';
// RoPE cos/sin come from the tfjs forward's own tables, so both engines rotate identically.
import { ropeValues } from '../builtin/transformer.ts';

/** Keys (transposed) and values per layer: kT [n, H, dh, len], v [n, H, len, dh], n = prompts or rows. */
export interface KVCache {
  count: number;
  length: number;
  kT: Float32Array[];
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
  /** Each row's own earlier keys (capacity own.cache.length) and how many are filled per row. */
  own?: { cache: KVCache; valid: ArrayLike<number> };
  useLora: boolean;
}

export interface ForwardResult {
  /** [rows, seq, vocab]. */
  logits: Float32Array;
  /** Per layer this call's keys (RoPE applied) and values, [rows, H, seq, dh]. */
  keys: Float32Array[];
  values: Float32Array[];
}

export interface BuiltinOrtOptions {
  threads?: number;
  spin?: boolean;
  device?: Device;
}


/** An empty cache of one masked zero position (the graph never sees a zero-sized dimension). */
export function emptyCache(arch: Architecture, count: number, length = 1): KVCache {
  const n = count * arch.nHeads * headDim(arch) * length;
  return { count, length, kT: Array.from({ length: arch.nLayers }, () => new Float32Array(n)), v: Array.from({ length: arch.nLayers }, () => new Float32Array(n)) };
}

export class BuiltinOrtModel {
  readonly arch: Architecture;
  private readonly session: OrtSession;
  private readonly spec: BuiltinGraphSpec;
  /** Current adapter values (fed each call) and zeros of the B shapes (the reference policy). */
  private loraFeeds: Record<string, Tensor> = {};
  private zeroB: Record<string, Tensor> = {};

  constructor(model: { arch: Architecture; weights: ModelWeights; lora: LoraSet | null }, options: BuiltinOrtOptions = {}) {
    this.arch = model.arch;
    this.spec = { arch: model.arch, lora: loraSpec(model.lora?.config ?? null) };
    this.session = new OrtSession(buildBuiltinGraph(this.spec, model.weights), { threads: options.threads, spin: options.spin, device: options.device, label: 'built-in model' });
    if (model.lora) this.syncLora(model.lora);
  }

  get hasLora(): boolean {
    return this.spec.lora !== null;
  }

  /** Read the adapters' current values (after each learner update); the session is not rebuilt. */
  syncLora(lora: LoraSet): void {
    const spec = this.spec.lora;
    if (!spec) throw new Error('the ONNX graph was built without LoRA inputs');
    if (lora.config.r !== spec.r || lora.scale !== spec.scale || lora.config.targetModules.join() !== spec.targets.join()) {
      throw new Error('LoRA settings differ from those the ONNX graph was built for');
    }
    const { r, scale } = spec;
    const d = this.arch.dModel;
    const feeds: Record<string, Tensor> = {};
    const zeros: Record<string, Tensor> = {};
    const put = (name: string, a: Float32Array, aDims: number[], b: Float32Array, bDims: number[]) => {
      feeds[`${name}.a`] = floatTensor(a, aDims);
      feeds[`${name}.b`] = floatTensor(b, bDims);
      zeros[`${name}.b`] = floatTensor(new Float32Array(b.length), bDims);
    };
    lora.layers.forEach((adapters, i) => {
      // q, k, v: A' = [s·Aq | s·Ak | s·Av] [d, 3r], B = blockdiag(Bq, Bk, Bv) [3r, 3d]; absent adapters stay zero.
      if (QKV.some((p) => spec.targets.includes(p))) {
        const a = new Float32Array(d * 3 * r);
        const b = new Float32Array(3 * r * 3 * d);
        QKV.forEach((p, j) => {
          const adapter = adapters[p];
          if (!adapter) return;
          const av = adapter.a.dataSync() as Float32Array; // [d, r]
          const bv = adapter.b.dataSync() as Float32Array; // [r, d]
          for (let row = 0; row < d; row++) for (let c = 0; c < r; c++) a[row * 3 * r + j * r + c] = scale * av[row * r + c];
          for (let row = 0; row < r; row++) b.set(bv.subarray(row * d, (row + 1) * d), (j * r + row) * 3 * d + j * d);
        });
        put(`lora.${i}.qkv`, a, [d, 3 * r], b, [3 * r, 3 * d]);
      }
      for (const p of spec.targets) {
        if ((QKV as readonly string[]).includes(p)) continue;
        const adapter = adapters[p as Projection];
        if (!adapter) throw new Error(`LoRA adapter ${i}.${p} missing`);
        const a = Float32Array.from(adapter.a.dataSync() as Float32Array, (x) => scale * x);
        put(`lora.${i}.${p}`, a, adapter.a.shape, Float32Array.from(adapter.b.dataSync() as Float32Array), adapter.b.shape);
      }
    });
    this.loraFeeds = feeds;
    this.zeroB = zeros;
  }

  forward(req: ForwardRequest): ForwardResult {
    const { arch } = this;
    const { rows: B, seq: S } = req;
    const H = arch.nHeads;
    const dh = headDim(arch);
    const prompt = req.prompt ?? { cache: emptyCache(arch, B), valid: new Int32Array(B) };
    const own = req.own ?? { cache: emptyCache(arch, B), valid: new Int32Array(B) };
    const U = prompt.cache.count;
    const G = B / U;
    if (!Number.isInteger(G)) throw new Error(`${B} rows do not split into ${U} prompt groups`);
    const P = prompt.cache.length;
    const T = own.cache.length;
    const K = P + T + S;

    // Additive mask [B, 1, S, K]: prompt keys below the row's valid length, own keys below its filled count, new keys
    // causally.
    const bias = new Float32Array(B * S * K).fill(NEG);
    for (let r = 0; r < B; r++) {
      for (let i = 0; i < S; i++) {
        const o = (r * S + i) * K;
        bias.fill(0, o, o + prompt.valid[r]);
        bias.fill(0, o + P, o + P + own.valid[r]);
        bias.fill(0, o + P + T, o + P + T + i + 1);
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
    const { cos, sin } = ropeValues(arch, req.positions);

    const feeds: Record<string, Tensor> = {
      input_ids: int64Tensor(req.tokens, [B, S]),
      patch_pixels: floatTensor(pixels, [patchCount, patchDim(arch)]),
      patch_slots: int64Tensor(patchSlots, [patchCount]),
      patch_index: int64Tensor(patchIndex, [B, S]),
      rope_cos: floatTensor(cos, [B, S, arch.dModel]),
      rope_sin: floatTensor(sin, [B, S, arch.dModel]),
      attn_bias: floatTensor(bias, [B, 1, S, K]),
      'shape.u_g_h_s_dh': int64Tensor([U, G, H, S, dh], [5]),
      'shape.u_h_gs_dh': int64Tensor([U, H, G * S, dh], [4]),
      'shape.u_h_g_s_p': int64Tensor([U, H, G, S, P], [5]),
      'shape.b_h_s_p': int64Tensor([B, H, S, P], [4]),
      'shape.u_g_h_s_p': int64Tensor([U, G, H, S, P], [5]),
      'shape.u_h_gs_p': int64Tensor([U, H, G * S, P], [4]),
      'shape.u_h_g_s_dh': int64Tensor([U, H, G, S, dh], [5]),
      'shape.b_h_s_dh': int64Tensor([B, H, S, dh], [4]),
      score_splits: int64Tensor([P, T, S], [3]),
      ...(this.spec.lora ? { ...this.loraFeeds, ...(req.useLora ? {} : this.zeroB) } : {}),
    };
    for (let i = 0; i < arch.nLayers; i++) {
      feeds[`prompt_kT.${i}`] = floatTensor(prompt.cache.kT[i], [U, H, dh, P]);
      feeds[`prompt_v.${i}`] = floatTensor(prompt.cache.v[i], [U, H, P, dh]);
      feeds[`own_kT.${i}`] = floatTensor(own.cache.kT[i], [B, H, dh, T]);
      feeds[`own_v.${i}`] = floatTensor(own.cache.v[i], [B, H, T, dh]);
    }
    const out = this.session.run(feeds);
    return {
      logits: out.logits.data as Float32Array,
      keys: Array.from({ length: arch.nLayers }, (_, i) => out[`key.${i}`].data as Float32Array),
      values: Array.from({ length: arch.nLayers }, (_, i) => out[`value.${i}`].data as Float32Array),
    };
  }

  dispose(): void {
    this.session.dispose();
  }
}
