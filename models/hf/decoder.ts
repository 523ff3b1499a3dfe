// The decoder-only language model shared by every Hugging Face architecture metrl runs: Llama,
// Qwen2, Gemma 3 text, and the language models inside Idefics3 (SmolVLM) and Gemma3ForConditionalGeneration. What
// differs between them is data (models/hf/config.ts: DecoderConfig; models/<arch>/language-model.ts: tensor names);
// the network is this one file, written with tfjs ops that autodiff goes through (LoRA training takes gradients). The
// block, final norm and head are models/hf/decoder-ops.ts's definition, executed here by TfjsDecoderOps; the ONNX
// Runtime engine builds its graph from the same definition (models/onnx/hf/hf-graph.ts).
//
// forward: ids [B, T] (left-padded batches: attention mask 0 on pads) → logits [B, T, V]
//   x = embed(ids) (× sqrt(H) for Gemma; or caller-given inputsEmbeds, e.g. with image features merged in)
//   per layer: x += attn(norm(x)) ; x += mlp(norm(x))      (Gemma: outputs normalised again before each add)
//   logits = norm(x) · W_outᵀ  (W_out = embeddings when tied; optional tanh soft-capping)
// Rows are packed as [B·T, H] so every projection is one 2-D matrix product. An optional KV cache (post-RoPE keys and
// values of earlier positions) makes incremental decoding one position per step (models/hf/generate.ts).
import * as tf from '@tensorflow/tfjs';
import type { DecoderConfig } from './config.ts';
import type { TextModelLayout } from './layout.ts';
import { attention, buildMask, type LayerKV } from '../layers/attention.ts';
import { embeddingLookup } from '../layers/embedding.ts';
import { linear, type LinearWeights } from '../layers/linear.ts';
import { activate } from '../layers/mlp.ts';
import { rmsNorm } from '../layers/rms-norm.ts';
import { mropeTable } from '../layers/mrope.ts';
import { applyRope, disposeRope, inverseFrequencies, ropeTable, type RopeTable } from '../layers/rope.ts';
import { customGrad, mm } from '../ops.ts';
import {
  decoderBlock,
  decoderFinalNorm,
  decoderLogits,
  type AttentionSpec,
  type DecoderOps,
  type WeightTensor,
} from './decoder-ops.ts';
import type { DecoderWeights } from './decoder-weights.ts';
import type { MlpActivation } from '../layers/mlp.ts';
import type { NormStyle } from '../layers/rms-norm.ts';

/** Per layer: keys and values of every position so far, [B, nkv, S, d]. */
export interface KVCache {
  layers: LayerKV[];
  /** S: positions held (padding included). */
  length: number;
}

export interface ForwardInput {
  /** Token ids [B][T]. With a cache these are the new positions only. */
  ids: ArrayLike<number>[];
  /** [B][past + T]: 1 on real tokens, 0 on padding. Default: all ones. */
  attentionMask?: ArrayLike<number>[];
  /** RoPE positions [B][T]. Default: from the attention mask as generate() does (cumsum - 1, pads at 1). */
  positionIds?: ArrayLike<number>[];
  /**
   * Multimodal RoPE (a config with `mrope`): [3, B·T] axis-major, the temporal ids of every row (b·T + t), then the
   * height ids, then the width ids (models/qwen-vl/rope-index.ts). Absent: every axis takes positionIds (text rows).
   */
  mropePositions?: ArrayLike<number>;
  /**
   * DeepStack (Qwen3-VL): features [M, H] added after layer j (j < features.length) to the rows `rows` (b·T + t, the
   * image tokens in order). Constants: no gradient flows into them.
   */
  deepstack?: { rows: Int32Array; features: tf.Tensor2D[] };
  /** Replaces the embedding lookup: [B, T, H] (for Gemma already scaled; image features merged after scaling). */
  inputsEmbeds?: tf.Tensor3D;
  /** Gemma 3 [B][T]: 1 on image tokens; each run of them attends to itself bidirectionally (prefill only). */
  tokenTypeIds?: ArrayLike<number>[];
  /**
   * Packed rows (the learner's shared prompts; no cache): [B][T] 0 on a shared prefix, k > 0 on the k-th sequence
   * packed after it, which sees the prefix and itself only (layers/attention.ts buildMask). Give positionIds with it.
   */
  segments?: ArrayLike<number>[];
  /** Earlier positions' keys and values; absent for a fresh sequence. Not disposed by forward. */
  cache?: KVCache | null;
  /** Return the cache extended by this pass (default false). */
  returnCache?: boolean;
  /** Apply LoRA adapters where attached (default true); false gives the frozen base (the reference policy). */
  useLora?: boolean;
  /** Which logit rows to compute: every position (default), each sequence's last one ([B, 1, V]), or none. */
  logits?: 'all' | 'last' | 'none';
  /** With logits 'all': only positions t >= logitsFrom ([B, T - logitsFrom, V]); the learner needs the completion's
   *  rows only, and a long prompt's full [T, V] logits would dominate memory. */
  logitsFrom?: number;
  /** Learner memory: keep only each block's input for the backward pass and recompute the block there (LoRA
   *  gradients only; no cache). About one more forward pass of compute. */
  recompute?: boolean;
  /** Also return the residual stream: embeddings, after each layer, after the final norm (each [B·T, H]). */
  collectHidden?: boolean;
}

export interface ForwardOutput {
  /** [B, T, V], [B, 1, V] (logits 'last') or [B, T - logitsFrom, V]; null with logits 'none'. */
  logits: tf.Tensor3D | null;
  /** Final-normalised hidden states [B·T, H] (the input of the output head). */
  hidden: tf.Tensor2D;
  cache: KVCache | null;
  hiddenStates?: tf.Tensor2D[];
}

/** The plain-array description of a forward pass (what recomputation needs to rebuild its constants). */
interface PassSpec {
  B: number;
  T: number;
  past: number;
  positions: Int32Array;
  /** [3, B·T] multimodal positions, when the config has mrope. */
  mropePositions?: Int32Array;
  maskRows: number[][];
  tokenTypeIds?: number[][];
  segments?: number[][];
}

interface PassContext extends PassSpec {
  ropeGlobal: RopeTable;
  ropeLocal: RopeTable | null;
  fullMask: tf.Tensor4D;
  slidingMask: tf.Tensor4D | null;
}

function disposeContext(ctx: PassContext): void {
  disposeRope(ctx.ropeGlobal);
  if (ctx.ropeLocal) disposeRope(ctx.ropeLocal);
  ctx.fullMask.dispose();
  ctx.slidingMask?.dispose();
}

/** generate()'s positions: cumsum(mask) - 1, with padded positions set to 1. Row by row, [B][S]. */
export function positionsFromMask(mask: ArrayLike<number>[]): Int32Array[] {
  return mask.map((row) => {
    const out = new Int32Array(row.length);
    let sum = 0;
    for (let j = 0; j < row.length; j++) {
      sum += row[j];
      out[j] = row[j] === 1 ? sum - 1 : 1;
    }
    return out;
  });
}

/**
 * The tfjs executor of the shared block (models/hf/decoder-ops.ts): rows packed as [B·T, …], LoRA from the attached
 * variables when `useLora`, the pass's RoPE tables and masks, and a tensor KV cache ([B, nkv, S, d] per layer, `kv`
 * after attention ran). The layer functions are the ones the tfjs forward always used (models/layers/).
 */
class TfjsDecoderOps implements DecoderOps<tf.Tensor> {
  kv: LayerKV | null = null;
  constructor(
    private readonly ctx: PassContext | null,
    private readonly cache: LayerKV | null,
    private readonly useLora: boolean,
  ) {}
  linear(x: tf.Tensor, l: LinearWeights): tf.Tensor {
    return linear(x as tf.Tensor2D, l, this.useLora);
  }
  rmsNorm(x: tf.Tensor, weight: WeightTensor, eps: number, style: NormStyle): tf.Tensor {
    return rmsNorm(x, weight as tf.Tensor1D, eps, style);
  }
  heads(x: tf.Tensor, n: number, d: number): tf.Tensor {
    return tf.reshape(x, [x.shape[0], n, d]); // [B·T, n·d] → [B·T, n, d]
  }
  rope(x: tf.Tensor, table: 'global' | 'local'): tf.Tensor {
    const ctx = this.ctx!;
    return applyRope(x as tf.Tensor3D, table === 'local' && ctx.ropeLocal ? ctx.ropeLocal : ctx.ropeGlobal);
  }
  attention(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, spec: AttentionSpec): tf.Tensor {
    const ctx = this.ctx!;
    const shape = {
      batch: ctx.B,
      queries: ctx.T,
      heads: spec.heads,
      kvHeads: spec.kvHeads,
      headDim: spec.headDim,
      scale: spec.scale,
      softcap: spec.softcap,
    };
    const { out, kv } = attention(
      q as tf.Tensor3D,
      k as tf.Tensor3D,
      v as tf.Tensor3D,
      spec.sliding ? ctx.slidingMask! : ctx.fullMask,
      shape,
      this.cache,
    );
    this.kv = kv;
    return out;
  }
  activation(x: tf.Tensor, act: MlpActivation): tf.Tensor {
    return activate(x, act);
  }
  mul(a: tf.Tensor, b: tf.Tensor): tf.Tensor {
    return tf.mul(a, b);
  }
  add(a: tf.Tensor, b: tf.Tensor): tf.Tensor {
    return tf.add(a, b);
  }
  project(x: tf.Tensor, w: WeightTensor): tf.Tensor {
    return mm(x as tf.Tensor2D, w as tf.Tensor2D);
  }
  softcap(x: tf.Tensor, cap: number): tf.Tensor {
    return tf.mul(tf.tanh(tf.div(x, cap)), cap);
  }
}

export class HfDecoder {
  constructor(
    readonly config: DecoderConfig,
    readonly layout: TextModelLayout,
    readonly weights: DecoderWeights,
    /**
     * The weights live on tfjs's CPU backend (plain host arrays: HfPolicy.load's hostWeights): embed gathers rows in
     * TypeScript rather than moving the whole table into the active backend.
     */
    readonly hostWeights = false,
  ) {}

  /** Token embeddings [B, T, H], Gemma's sqrt(H) scaling applied (the rows image features replace). */
  embed(ids: ArrayLike<number>[]): tf.Tensor3D {
    const B = ids.length;
    const T = ids[0]?.length ?? 0;
    const flat = new Int32Array(B * T);
    ids.forEach((row, b) => {
      if (row.length !== T) throw new Error(`embed: sequence ${b} has ${row.length} ids, sequence 0 has ${T}`);
      for (let t = 0; t < T; t++) flat[b * T + t] = row[t];
    });
    if (this.hostWeights) return this.hostEmbed(flat, B, T);
    return tf.tidy(() => {
      let x = embeddingLookup(this.weights.embed, flat); // [B·T, H]
      if (this.config.embedScale !== null) x = tf.mul(x, this.config.embedScale);
      return tf.reshape(x, [B, T, this.config.hiddenSize]) as tf.Tensor3D;
    });
  }

  /** embed's lookup on a host-held table (dataSync gives the CPU backend's own array: no copy), as tfjs computes it. */
  private hostEmbed(ids: Int32Array, B: number, T: number): tf.Tensor3D {
    const H = this.config.hiddenSize;
    const V = this.config.vocabSize;
    const { table, layout } = this.weights.embed;
    const data = table.dataSync() as Float32Array; // rows [V, H] or columns [H, V]
    const scale = this.config.embedScale === null ? null : Math.fround(this.config.embedScale);
    const out = new Float32Array(ids.length * H);
    ids.forEach((id, n) => {
      if (!(id >= 0 && id < V)) throw new Error(`embed: token ${id} outside the vocabulary`);
      for (let h = 0; h < H; h++) {
        const x = layout === 'rows' ? data[id * H + h] : data[h * V + id];
        out[n * H + h] = scale === null ? x : Math.fround(x * scale);
      }
    });
    return tf.tensor3d(out, [B, T, H]);
  }

  /** Constants of one forward pass (RoPE tables, masks), rebuilt from plain arrays when a layer is recomputed. */
  private passContext(spec: PassSpec): PassContext {
    const c = this.config;
    const { B, T, past, positions, mropePositions, maskRows, tokenTypeIds, segments } = spec;
    const packed = segments
      ? { segments, positions: Array.from({ length: B }, (_, b) => Array.from(positions.subarray(b * T, (b + 1) * T))) }
      : {};
    return {
      ...spec,
      ropeGlobal:
        c.mrope && mropePositions
          ? mropeTable(mropePositions, { ...c.mrope, headDim: c.headDim, theta: c.ropeTheta })
          : ropeTable(positions, inverseFrequencies(c.headDim, c.ropeTheta, c.ropeLinearFactor)),
      ropeLocal:
        c.ropeLocalTheta !== null ? ropeTable(positions, inverseFrequencies(c.headDim, c.ropeLocalTheta)) : null,
      fullMask: buildMask({
        batch: B,
        queries: T,
        past,
        attentionMask: maskRows,
        window: null,
        tokenTypeIds,
        ...packed,
      }),
      slidingMask: c.layerTypes.includes('sliding_attention')
        ? buildMask({
            batch: B,
            queries: T,
            past,
            attentionMask: maskRows,
            window: c.slidingWindow,
            tokenTypeIds,
            ...packed,
          })
        : null,
    };
  }

  /**
   * One decoder block: x [B·T, H] → x [B·T, H], and this layer's keys/values (cache included). The block itself is
   * models/hf/decoder-ops.ts's decoderBlock, the definition the ONNX graph is built from too; this is its tfjs executor.
   */
  private block(
    i: number,
    x: tf.Tensor2D,
    ctx: PassContext,
    cache: LayerKV | null,
    useLora: boolean,
  ): { x: tf.Tensor2D; kv: LayerKV } {
    const ops = new TfjsDecoderOps(ctx, cache, useLora);
    const out = decoderBlock(ops, this.config, this.weights.layers[i], i, x as tf.Tensor) as tf.Tensor2D;
    return { x: out, kv: ops.kv! };
  }

  /**
   * A block whose backward pass recomputes it (gradient checkpointing): the tape keeps only the block's input, and
   * gradients reach the block's LoRA variables and its input. Base weights get none: this is for LoRA training.
   */
  private recomputedBlock(i: number, x: tf.Tensor2D, spec: PassSpec, ctx: PassContext, useLora: boolean): tf.Tensor2D {
    const w = this.weights.layers[i];
    const vars = useLora
      ? [w.q, w.k, w.v, w.o, w.mlp.gate, w.mlp.up, w.mlp.down].flatMap((l) => (l.lora ? [l.lora.a, l.lora.b] : []))
      : [];
    const f = customGrad((xIn: tf.Tensor, ...rest: unknown[]) => {
      const save = rest[rest.length - 1] as (t: tf.Tensor[]) => void;
      const value = tf.tidy(() => this.block(i, xIn as tf.Tensor2D, ctx, null, useLora).x);
      save([xIn]);
      return {
        value,
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
          // A nested gradient computation replaces the engine's tape; the outer backward pass still needs its own.
          const engine = tf.engine() as unknown as { state: { activeTape: unknown } };
          const outerTape = engine.state.activeTape;
          const again = this.passContext(spec);
          const xVar = tf.variable(saved[0], true);
          try {
            const { value: v, grads } = tf.variableGrads(
              () =>
                tf.sum(tf.mul(this.block(i, xVar as unknown as tf.Tensor2D, again, null, useLora).x, dy)) as tf.Scalar,
              [xVar, ...vars],
            );
            v.dispose();
            return [grads[xVar.name], ...vars.map((u) => grads[u.name])];
          } finally {
            engine.state.activeTape = outerTape;
            xVar.dispose();
            disposeContext(again);
          }
        },
      };
    });
    return f(x, ...vars) as tf.Tensor2D;
  }

  forward(input: ForwardInput): ForwardOutput {
    this.checkHeld();
    const c = this.config;
    const B = input.ids.length;
    const T = input.ids[0]?.length ?? 0;
    const past = input.cache?.length ?? 0;
    const S = past + T;
    const mask = input.attentionMask ?? Array.from({ length: B }, () => new Int32Array(S).fill(1));
    if (mask.length !== B || mask.some((r) => r.length !== S))
      throw new Error(`forward: attention mask must be [${B}, ${S}]`);
    const positions = new Int32Array(B * T);
    const given = input.positionIds ?? positionsFromMask(mask).map((r) => r.subarray(past));
    given.forEach((row, b) => {
      for (let t = 0; t < T; t++) positions[b * T + t] = row[t];
    });
    let mropePositions: Int32Array | undefined;
    if (input.mropePositions) {
      if (!c.mrope) throw new Error('forward: mropePositions for a decoder without multimodal RoPE');
      if (input.mropePositions.length !== 3 * B * T)
        throw new Error(`forward: mropePositions must be [3, ${B * T}], got ${input.mropePositions.length} ids`);
      mropePositions = Int32Array.from(input.mropePositions);
    }
    // Row n of the residual stream takes DeepStack feature row deepIndex[n] - 1 (0: none): a gather, not a scatter.
    const deepIndex = input.deepstack ? new Int32Array(B * T) : null;
    input.deepstack?.rows.forEach((row, k) => {
      deepIndex![row] = k + 1;
    });
    const useLora = input.useLora ?? true;
    const recompute = input.recompute ?? false;
    if (recompute && (input.cache || input.returnCache || input.collectHidden))
      throw new Error('forward: recompute is for the learner (no cache, no hidden states)');
    if (input.segments && (input.cache || input.returnCache || !input.positionIds))
      throw new Error('forward: packed segments need positionIds and no cache');
    const spec: PassSpec = {
      B,
      T,
      past,
      positions,
      mropePositions,
      maskRows: mask.map((r) => Array.from(r)),
      tokenTypeIds: input.tokenTypeIds?.map((r) => Array.from(r)),
      segments: input.segments?.map((r) => Array.from(r)),
    };
    const ctx = this.passContext(spec);
    try {
      return tf.tidy((): tf.TensorContainer => {
        const hiddenStates: tf.Tensor2D[] = [];
        let x: tf.Tensor2D = input.inputsEmbeds
          ? (tf.reshape(input.inputsEmbeds, [B * T, c.hiddenSize]) as tf.Tensor2D)
          : (tf.reshape(this.embed(input.ids), [B * T, c.hiddenSize]) as tf.Tensor2D); // [B·T, H]
        if (input.collectHidden) hiddenStates.push(x);
        const newCache: LayerKV[] = [];
        for (let i = 0; i < c.numLayers; i++) {
          if (recompute) {
            x = this.recomputedBlock(i, x, spec, ctx, useLora);
          } else {
            // One tidy per block: without a gradient tape (reference log-probs, prefill) a block's attention scores
            // and MLP activations are freed before the next block (a 1,900-token packed row holds ~0.5 GB of them);
            // under a tape, tidy keeps what the backward pass saved.
            const r = tf.tidy(
              () => this.block(i, x, ctx, input.cache?.layers[i] ?? null, useLora) as unknown as tf.TensorContainer,
            ) as unknown as { x: tf.Tensor2D; kv: LayerKV };
            x = r.x;
            newCache.push(r.kv);
          }
          const deep = input.deepstack?.features[i];
          if (deep && deepIndex) {
            const H = c.hiddenSize;
            x = tf.add(x, tf.gather(tf.concat([tf.zeros([1, H]), deep]), tf.tensor1d(deepIndex, 'int32'))); // [B·T, H]
          }
          if (input.collectHidden) hiddenStates.push(x);
        }
        const hidden = decoderFinalNorm(
          new TfjsDecoderOps(ctx, null, false),
          c,
          this.weights,
          x as tf.Tensor,
        ) as tf.Tensor2D; // [B·T, H]
        if (input.collectHidden) hiddenStates.push(hidden);
        let logits: tf.Tensor3D | null = null;
        if ((input.logits ?? 'all') !== 'none') {
          const from = input.logits === 'last' ? T - 1 : (input.logitsFrom ?? 0);
          if (from < 0 || from >= T) throw new Error(`forward: logitsFrom ${from} outside 0..${T - 1}`);
          const rows =
            from === 0
              ? hidden
              : (tf.reshape(
                  tf.slice(tf.reshape(hidden, [B, T, c.hiddenSize]), [0, from, 0], [B, T - from, c.hiddenSize]),
                  [B * (T - from), c.hiddenSize],
                ) as tf.Tensor2D);
          logits = tf.reshape(this.head(rows), [B, T - from, c.vocabSize]) as tf.Tensor3D;
        }
        const cache = input.returnCache ? { layers: newCache, length: S } : null;
        const result: ForwardOutput = { logits, hidden, cache, ...(input.collectHidden ? { hiddenStates } : {}) };
        return result as unknown as tf.TensorContainer;
      }) as unknown as ForwardOutput;
    } finally {
      disposeContext(ctx);
    }
  }

  /** Logits [N, V] of final-normalised hidden rows [N, H]: the output head and Gemma's optional soft-capping. */
  head(rows: tf.Tensor2D): tf.Tensor2D {
    this.checkHeld();
    return decoderLogits(
      new TfjsDecoderOps(null, null, false),
      this.config,
      this.weights,
      rows as tf.Tensor,
    ) as tf.Tensor2D; // [N, V]
  }

  /**
   * Dispose the projections' weights (and an untied output head) on tfjs: called once ONNX Runtime holds them (its
   * sessions map the decoder's shared weight file, models/onnx/weight-file.ts), so that they are not held a second
   * time on the host. Shapes stay readable (adapters and graphs need them); the tfjs forward cannot run after this.
   * The embedding table stays: tokens are looked up on the host (it is a tied model's head too).
   */
  releaseProjectionWeights(): void {
    if (!this.hostWeights) throw new Error('internal: only host-held weights are released (HfPolicy.load hostWeights)');
    for (const l of this.linears().values()) l.w.dispose();
    if (this.weights.lmHead !== this.weights.embed.table) this.weights.lmHead.dispose();
    this.projectionsReleased = true;
  }

  private projectionsReleased = false;

  private checkHeld(): void {
    if (this.projectionsReleased)
      throw new Error('internal: the tfjs forward ran after the projection weights were released to ONNX Runtime');
  }

  /** Every linear layer of the decoder, by module path (model.layers.0.self_attn.q_proj, …): LoRA targets. */
  linears(): Map<string, LinearWeights> {
    const out = new Map<string, LinearWeights>();
    for (const w of this.weights.layers)
      for (const l of [w.q, w.k, w.v, w.o, w.mlp.gate, w.mlp.up, w.mlp.down]) out.set(l.module, l);
    return out;
  }

  /** The base weights (for supervised training of the whole model; frozen otherwise). */
  baseVariables(): tf.Variable[] {
    const out: tf.Variable[] = [this.weights.embed.table, this.weights.finalNorm];
    if (this.weights.lmHead !== this.weights.embed.table) out.push(this.weights.lmHead);
    for (const w of this.weights.layers) {
      for (const n of [w.inputNorm, w.postAttnNorm, w.preFfnNorm, w.postFfnNorm, w.qNorm, w.kNorm]) if (n) out.push(n);
      for (const l of [w.q, w.k, w.v, w.o, w.mlp.gate, w.mlp.up, w.mlp.down]) {
        out.push(l.w);
        if (l.bias) out.push(l.bias);
      }
    }
    return out;
  }

  /** The attached LoRA variables (A and B of every adapted linear). */
  loraVariables(): tf.Variable[] {
    return [...this.linears().values()].flatMap((l) => (l.lora ? [l.lora.a, l.lora.b] : []));
  }

  dispose(): void {
    for (const l of this.linears().values()) {
      l.lora?.a.dispose();
      l.lora?.b.dispose();
      l.lora = undefined;
    }
    for (const v of this.baseVariables()) v.dispose();
  }
}

/** Dispose a cache's tensors. */
export function disposeCache(cache: KVCache | null | undefined): void {
  for (const kv of cache?.layers ?? []) {
    kv.k.dispose();
    kv.v.dispose();
  }
}
