// Causal self-attention with grouped KV heads, as the Hugging Face decoders compute it (transformers'
// "eager" attention):
// - GQA: query head h reads KV head h // (heads / kvHeads) (repeat_interleave). Query heads are laid out so each KV
//   head's `rep` query heads form one block of rows, so K and V are never copied per query head.
// - scores = q·kᵀ · scale (optional tanh soft-capping), plus an additive mask, softmax in float32, times V.
// - Masks (built once per forward by `buildMask`): causal on absolute (cache) indices j <= i, sliding window
//   i - j < window, padding on keys only, and Gemma 3's bidirectional image blocks (token_type_ids) OR-ed in.
//   Packed rows (the learner's shared prompts, models/hf/score.ts) add segments: a query sees the shared prefix
//   (segment 0) and its own segment only, and the window is measured in positions, not indices.
// - The KV cache holds post-RoPE keys and the values of every earlier position of every sequence: [B, kvHeads, S, d].
import * as tf from '@tensorflow/tfjs';
import { customGrad, mm } from '../ops.ts';

/** Large negative added to masked scores: exp underflows to 0 and a fully masked row stays finite (pad queries). */
export const MASKED = -1e9;

/** Query rows per KV head from which attention switches from one batched product to per-block 2-D products. */
const PER_BLOCK_ROWS = 16;

export interface LayerKV {
  k: tf.Tensor4D; // [B, kvHeads, S, d] (RoPE applied)
  v: tf.Tensor4D; // [B, kvHeads, S, d]
}

export interface MaskSpec {
  batch: number;
  /** New (query) positions per sequence. */
  queries: number;
  /** Positions already in the cache: query t has absolute index past + t. */
  past: number;
  /** [B][past + queries] 1 = a real token, 0 = padding (keys only). */
  attentionMask: number[][];
  /** Sliding layers: a query sees keys with i - j < window. null: no window. */
  window: number | null;
  /** Gemma 3: [B][queries] 1 on image tokens; each run of consecutive 1s attends to itself bidirectionally. */
  tokenTypeIds?: number[][];
  /**
   * Packed rows (no cache): [B][queries] segment of each position, 0 for the shared prefix (a prompt), k > 0 for the
   * k-th sequence packed after it (a completion). A query sees keys of segment 0 and of its own segment only.
   */
  segments?: number[][];
  /** With segments: [B][queries] RoPE positions, so the sliding window compares positions (packed indices jump). */
  positions?: number[][];
}

/** Additive mask [B, 1, T, S] (0 allowed, MASKED not), S = past + T. */
export function buildMask(spec: MaskSpec): tf.Tensor4D {
  return tf.tensor4d(maskValues(spec), [spec.batch, 1, spec.queries, spec.past + spec.queries]);
}

/** buildMask's values as a plain array [B·T·S] (the ONNX engine feeds these). */
export function maskValues(spec: MaskSpec): Float32Array {
  const { batch, queries: t, past, attentionMask, window } = spec;
  const s = past + t;
  if (spec.segments && past > 0) throw new Error('buildMask: segments are for packed rows without a cache');
  const out = new Float32Array(batch * t * s);
  for (let b = 0; b < batch; b++) {
    const keyOk = attentionMask[b];
    if (keyOk.length !== s) throw new Error(`attention mask row ${b} has ${keyOk.length} entries, expected ${s}`);
    // Image block id of each new position (-1 for text); keys from the cache belong to no block.
    let groups: Int32Array | null = null;
    if (spec.tokenTypeIds) {
      groups = new Int32Array(t).fill(-1);
      let g = -1;
      for (let q = 0; q < t; q++) {
        const isImage = spec.tokenTypeIds[b][q] === 1;
        if (isImage && (q === 0 || spec.tokenTypeIds[b][q - 1] !== 1)) g++;
        if (isImage) groups[q] = g;
      }
    }
    const seg = spec.segments?.[b];
    const pos = spec.positions?.[b];
    for (let q = 0; q < t; q++) {
      const i = past + q;
      const row = (b * t + q) * s;
      for (let j = 0; j < s; j++) {
        const distance = seg && pos ? pos[q] - pos[j] : i - j;
        let allowed = j <= i && (window === null || distance < window);
        if (!allowed && groups && j >= past) allowed = groups[q] >= 0 && groups[q] === groups[j - past];
        if (allowed && seg && seg[j] !== 0 && seg[j] !== seg[q]) allowed = false;
        if (allowed && keyOk[j] !== 1) allowed = false;
        out[row + j] = allowed ? 0 : MASKED;
      }
    }
  }
  return out;
}

export interface AttentionShape {
  batch: number;
  queries: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  scale: number;
  softcap: number | null;
  /** Force the per-block (true) or the batched (false) computation; default by block size. Same results. */
  perBlock?: boolean;
}

/**
 * q [B·T, heads, d], k and v [B·T, kvHeads, d] (RoPE already applied to q and k), optional cache of earlier keys and
 * values, additive mask [B, 1, T, S]. Returns the attention output [B·T, heads·d] and the cache extended by this pass.
 */
export function attention(
  q: tf.Tensor3D,
  k: tf.Tensor3D,
  v: tf.Tensor3D,
  mask: tf.Tensor4D,
  shape: AttentionShape,
  cache: LayerKV | null,
): { out: tf.Tensor2D; kv: LayerKV } {
  const { batch: B, queries: T, heads: H, kvHeads: KV, headDim: D } = shape;
  const rep = H / KV;
  // Keys/values of this pass, [B, KV, T, D], appended to the cache along the position axis.
  const kNew = tf.transpose(tf.reshape(k, [B, T, KV, D]), [0, 2, 1, 3]) as tf.Tensor4D;
  const vNew = tf.transpose(tf.reshape(v, [B, T, KV, D]), [0, 2, 1, 3]) as tf.Tensor4D;
  const kAll = cache ? (tf.concat([cache.k, kNew], 2) as tf.Tensor4D) : kNew;
  const vAll = cache ? (tf.concat([cache.v, vNew], 2) as tf.Tensor4D) : vNew;
  const S = kAll.shape[2];
  const out = tf.tidy(() => {
    // Query heads h = kv·rep + r: [B, H, T, D] is [B, KV, rep·T, D] in memory, one block of rows per KV head.
    const qh = tf.reshape(tf.transpose(tf.reshape(q, [B, T, H, D]), [0, 2, 1, 3]), [B * KV, rep * T, D]);
    const k3 = tf.reshape(kAll, [B * KV, S, D]);
    const v3 = tf.reshape(vAll, [B * KV, S, D]);
    let o: tf.Tensor; // [B·KV, rep·T, D]
    if (!(shape.perBlock ?? rep * T >= PER_BLOCK_ROWS)) {
      // Short blocks (decoding): one batched product is cheaper than splitting into many tiny ones.
      let scores: tf.Tensor = tf.mul(tf.matMul(qh, k3, false, true), shape.scale); // [B·KV, rep·T, S]
      if (shape.softcap !== null) scores = tf.mul(tf.tanh(tf.div(scores, shape.softcap)), shape.softcap);
      scores = tf.add(tf.reshape(scores, [B, H, T, S]), mask); // mask [B, 1, T, S] broadcast over heads
      o = tf.matMul(tf.reshape(tf.softmax(scores, -1), [B * KV, rep * T, S]), v3);
    } else {
      // Long blocks (prefill, learner): plain 2-D products per (sequence, KV head). On the WASM backend a batched
      // product with a transposed operand is about two orders of magnitude slower (docs/engines.md), and block by block the backward pass keeps one [rep·T, S] probability matrix per block, nothing more.
      const qBlocks = tf.unstack(qh); // [rep·T, D] each
      const kBlocks = tf.unstack(tf.transpose(k3, [0, 2, 1])); // [D, S] each
      const vBlocks = tf.unstack(v3); // [S, D] each
      const masks = tf.unstack(mask); // [1, T, S] per sequence
      o = tf.stack(
        qBlocks.map((x, i) =>
          // One tidy per block: only its output outlives it (and, under a tape, what the backward pass saved).
          tf.tidy(() => {
            const scores = mm(x as tf.Tensor2D, kBlocks[i] as tf.Tensor2D); // [rep·T, S]
            const probs = maskedSoftmax(scores, masks[Math.floor(i / KV)], shape.scale, shape.softcap, rep, T, S);
            return mm(probs, vBlocks[i] as tf.Tensor2D); // [rep·T, D]
          }),
        ),
      );
    }
    return tf.reshape(tf.transpose(tf.reshape(o, [B, H, T, D]), [0, 2, 1, 3]), [B * T, H * D]) as tf.Tensor2D;
  });
  if (cache) {
    kNew.dispose();
    vNew.dispose();
  }
  return { out, kv: { k: kAll, v: vAll } };
}

/**
 * softmax(scores · scale + mask) over keys for one block of rep·T query rows ([rep·T, S]; mask [1, T, S] shared by the
 * rep heads). Its gradient keeps only the probabilities (dx = p ⊙ (dy - Σ dy ⊙ p) · scale), where the plain ops would
 * keep the scaled and the masked scores as well: at long prompts these matrices are most of the learner's memory.
 */
function maskedSoftmax(
  scores: tf.Tensor2D,
  mask: tf.Tensor,
  scale: number,
  softcap: number | null,
  rep: number,
  T: number,
  S: number,
): tf.Tensor2D {
  const forward = (x: tf.Tensor) => {
    let s = tf.mul(x, scale);
    if (softcap !== null) s = tf.mul(tf.tanh(tf.div(s, softcap)), softcap);
    return tf.reshape(tf.softmax(tf.add(tf.reshape(s, [rep, T, S]), mask), -1), [rep * T, S]);
  };
  if (softcap !== null) return forward(scores) as tf.Tensor2D; // rare (no supported model sets it): plain autodiff
  const f = customGrad((x: tf.Tensor, save: (t: tf.Tensor[]) => void) => {
    const p = tf.tidy(() => forward(x));
    save([p]);
    return {
      value: p,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        tf.tidy(() => {
          const [y] = saved;
          return tf.mul(tf.mul(y, tf.sub(dy, tf.sum(tf.mul(dy, y), -1, true))), scale);
        }),
    };
  });
  return f(scores) as tf.Tensor2D;
}
