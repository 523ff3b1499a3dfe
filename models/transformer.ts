// The built-in model's forward pass: a decoder-only, pre-norm transformer (RMSNorm, rotary position embeddings,
// GELU MLP, untied output head) whose input sequence mixes character tokens and image patches. One function serves
// training (a padded batch, all positions), prompt prefill and cached incremental decoding (a few new positions
// attending to the key/value cache of earlier ones).
//
// Everything here runs on the tfjs WASM backend, forward and backward: token embeddings are a one-hot matrix product
// (the gradient of tf.gather needs UnsortedSegmentSum, which WASM lacks), and image patches are placed into the
// sequence by a gather with a hand-written gradient that never needs a segment sum.
import * as tf from '@tensorflow/tfjs';
import { headDim, patchDim, patchesPerImage, type Architecture } from './config.ts';
import { linear, type LoraSet } from './lora.ts';
import { customGrad, mm, selectRows } from './ops.ts';
import type { ModelWeights } from './weights.ts';

/** Keys and values of one layer, RoPE already applied to the keys: [batch, heads, positions, headDim]. */
export interface LayerCache {
  k: tf.Tensor4D;
  v: tf.Tensor4D;
}

/** One image occurrence in a batch: which unique image, and the flat index (row * length + column) of its first patch. */
export interface ImageSlot {
  image: number;
  start: number;
}

export interface ForwardBatch {
  batch: number;
  length: number;
  /** Token ids, [batch * length], row-major. */
  tokens: Int32Array;
  /** RoPE position of every token: [batch * length], or [length] when all rows share positions. */
  positions: Int32Array;
  /** Distinct images in this batch (each [patchesPerImage * patchDim], values in [0, 1]) and where they occur. */
  images: Float32Array[];
  slots: ImageSlot[];
  /** Additive attention mask [batch, length, pastLength + length] (0 or -1e9), or null when every key is visible. */
  mask: Float32Array | null;
}

export interface TransformerModel {
  arch: Architecture;
  weights: ModelWeights;
}

const NEG = -1e9;
const invFreqCache = new Map<string, Float32Array>();

function inverseFrequencies(arch: Architecture): Float32Array {
  const key = `${headDim(arch)}:${arch.ropeBase}`;
  let f = invFreqCache.get(key);
  if (!f) {
    const half = headDim(arch) / 2;
    f = new Float32Array(half);
    for (let i = 0; i < half; i++) f[i] = arch.ropeBase ** (-(2 * i) / headDim(arch));
    invFreqCache.set(key, f);
  }
  return f;
}

/** cos and sin tables for the given positions, shaped [rows, 1, length, headDim] (rows = 1 when positions are shared). */
function ropeTables(arch: Architecture, batch: ForwardBatch): { cos: tf.Tensor4D; sin: tf.Tensor4D } {
  const dh = headDim(arch);
  const half = dh / 2;
  const inv = inverseFrequencies(arch);
  const n = batch.positions.length;
  const cos = new Float32Array(n * dh);
  const sin = new Float32Array(n * dh);
  for (let i = 0; i < n; i++) {
    const p = batch.positions[i];
    for (let j = 0; j < half; j++) {
      const c = Math.cos(p * inv[j]);
      const s = Math.sin(p * inv[j]);
      cos[i * dh + j] = c;
      cos[i * dh + j + half] = c;
      sin[i * dh + j] = s;
      sin[i * dh + j + half] = s;
    }
  }
  const rows = n / batch.length;
  return { cos: tf.tensor4d(cos, [rows, 1, batch.length, dh]), sin: tf.tensor4d(sin, [rows, 1, batch.length, dh]) };
}

const rotationCache = new Map<number, tf.Variable>();

/** The matrix R with x R = rotate_half(x) = concat(-x2, x1): one matrix product instead of slices and a concat. */
function rotateHalfMatrix(dh: number): tf.Variable {
  let r = rotationCache.get(dh);
  if (!r || r.isDisposed) {
    const half = dh / 2;
    const m = new Float32Array(dh * dh);
    for (let j = 0; j < half; j++) {
      m[(j + half) * dh + j] = -1;
      m[j * dh + j + half] = 1;
    }
    // A frozen variable: kept across tidy scopes, and ops.mm skips its gradient.
    r = tf.variable(tf.tensor2d(m, [dh, dh]), false);
    rotationCache.set(dh, r);
  }
  return r;
}

function applyRope(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D, r: tf.Variable): tf.Tensor4D {
  const dh = x.shape[3];
  const rotated = tf.reshape(mm(tf.reshape(x, [-1, dh]), r as tf.Tensor2D), x.shape);
  return tf.add(tf.mul(x, cos), tf.mul(rotated, sin));
}

function rmsNorm(x: tf.Tensor2D, gain: tf.Variable, eps: number): tf.Tensor2D {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), gain);
}

/** Token embeddings: one-hot rows times the embedding table (differentiable on every backend). */
function embedTokens(model: TransformerModel, tokens: Int32Array): tf.Tensor2D {
  const v = model.arch.vocabSize;
  const oneHot = new Float32Array(tokens.length * v);
  for (let i = 0; i < tokens.length; i++) oneHot[i * v + tokens[i]] = 1;
  return selectRows(oneHot, tokens.length, model.weights.embed as tf.Tensor2D);
}

/**
 * Patch embeddings placed at their sequence positions ([batch * length, d], zero elsewhere). Each distinct image is
 * projected once; occurrences share it. The placement is a gather from [0; patch rows]; its gradient gathers the
 * output gradient back at the patch positions and sums occurrences of the same image with a small matrix product.
 */
function embedImages(model: TransformerModel, batch: ForwardBatch): tf.Tensor2D | null {
  if (batch.slots.length === 0) return null;
  const { arch, weights } = model;
  const p = patchesPerImage(arch);
  const d = arch.dModel;
  const u = batch.images.length;
  const n = batch.batch * batch.length;
  const pixels = new Float32Array(u * p * patchDim(arch));
  batch.images.forEach((img, i) => pixels.set(img, i * p * patchDim(arch)));
  const projected = tf.add(
    tf.add(mm(tf.sub(tf.tensor2d(pixels, [u * p, patchDim(arch)]), 0.5), weights.patchProj as tf.Tensor2D, { a: true }), weights.patchBias),
    tf.tile(weights.patchPos, [u, 1]),
  ) as tf.Tensor2D; // [u * p, d]

  const source = new Int32Array(n); // 0 = no patch here, 1 + row = that patch row
  const targets = new Int32Array(batch.slots.length * p); // sequence position of each occurrence's patches
  const selection = new Float32Array(u * batch.slots.length); // [u, occurrences] one-hot
  batch.slots.forEach((slot, o) => {
    for (let j = 0; j < p; j++) {
      source[slot.start + j] = 1 + slot.image * p + j;
      targets[o * p + j] = slot.start + j;
    }
    selection[slot.image * batch.slots.length + o] = 1;
  });
  const place = customGrad((rows: tf.Tensor) => {
    const value = tf.gather(tf.concat([tf.zeros([1, d]), rows as tf.Tensor2D], 0), tf.tensor1d(source, 'int32')) as tf.Tensor2D;
    const gradFunc = (dy: tf.Tensor) => {
      const perOccurrence = tf.reshape(tf.gather(dy, tf.tensor1d(targets, 'int32')), [batch.slots.length, p * d]) as tf.Tensor2D;
      return tf.reshape(tf.matMul(tf.tensor2d(selection, [u, batch.slots.length]), perOccurrence), [u * p, d]);
    };
    return { value, gradFunc };
  });
  return place(projected) as tf.Tensor2D;
}

/** Products per (row, head) at least this large go through the 2-D fast path one by one; smaller ones stay batched. */
const LOOP_THRESHOLD = Number(process.env.METRL_ATTN_LOOP ?? 4096);

/**
 * softmax(q kᵀ / sqrt(dh) + mask) v. WASM multiplies batched or transposed operands slowly, so for large blocks each
 * (row, head) pair is multiplied as a plain 2-D product (with fast-path gradients); tiny blocks (a decoding step)
 * are cheaper batched than as many separate calls.
 */
function attend(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: tf.Tensor4D | null): tf.Tensor4D {
  const [B, H, Tq, dh] = q.shape;
  const Tk = k.shape[2];
  const scale = 1 / Math.sqrt(dh);
  if (Tq * Tk < LOOP_THRESHOLD) {
    let scores = tf.mul(tf.matMul(q, k, false, true), scale);
    if (mask) scores = tf.add(scores, mask);
    return tf.matMul(tf.softmax(scores), v);
  }
  const n = B * H;
  const qs = tf.unstack(tf.reshape(q, [n, Tq, dh])) as tf.Tensor2D[];
  const kts = tf.unstack(tf.transpose(tf.reshape(k, [n, Tk, dh]), [0, 2, 1])) as tf.Tensor2D[];
  const vs = tf.unstack(tf.reshape(v, [n, Tk, dh])) as tf.Tensor2D[];
  let scores = tf.mul(tf.reshape(tf.stack(qs.map((x, i) => mm(x, kts[i]))), [B, H, Tq, Tk]), scale);
  if (mask) scores = tf.add(scores, mask);
  const ps = tf.unstack(tf.reshape(tf.softmax(scores), [n, Tq, Tk])) as tf.Tensor2D[];
  return tf.reshape(tf.stack(ps.map((p, i) => mm(p, vs[i]))), [B, H, Tq, dh]);
}

function splitHeads(x: tf.Tensor2D, rows: number, length: number, heads: number): tf.Tensor4D {
  return tf.transpose(tf.reshape(x, [rows, length, heads, -1]), [0, 2, 1, 3]);
}

/**
 * Run the transformer. With `past`, the batch's positions come after the cached ones and attend to them too.
 * Returns the final hidden states before the output norm ([batch * length, d]) and every layer's updated cache.
 */
export function forward(model: TransformerModel, batch: ForwardBatch, past: LayerCache[] | null, lora: LoraSet | null): { hidden: tf.Tensor2D; cache: LayerCache[] } {
  const { arch, weights } = model;
  const B = batch.batch;
  const T = batch.length;
  const H = arch.nHeads;
  const dh = headDim(arch);
  const scale = lora?.scale ?? 0;
  let x = embedTokens(model, batch.tokens);
  const images = embedImages(model, batch);
  if (images) x = tf.add(x, images);
  const { cos, sin } = ropeTables(arch, batch);
  const r = rotateHalfMatrix(dh);
  const pastLength = past ? past[0].k.shape[2] : 0;
  const mask = batch.mask ? tf.tensor4d(batch.mask, [B, 1, T, pastLength + T]) : null;
  const cache: LayerCache[] = [];
  weights.layers.forEach((layer, i) => {
    const adapters = lora?.layers[i] ?? {};
    const h = rmsNorm(x, layer.attnNorm, arch.normEps);
    const q = applyRope(splitHeads(linear(h, layer.proj.q_proj, adapters.q_proj, scale), B, T, H), cos, sin, r);
    let k = applyRope(splitHeads(linear(h, layer.proj.k_proj, adapters.k_proj, scale), B, T, H), cos, sin, r);
    let v = splitHeads(linear(h, layer.proj.v_proj, adapters.v_proj, scale), B, T, H);
    if (past) {
      k = tf.concat([past[i].k, k], 2);
      v = tf.concat([past[i].v, v], 2);
    }
    cache.push({ k, v });
    const attended = attend(q, k, v, mask); // [B, H, T, dh]
    const merged = tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [B * T, arch.dModel]) as tf.Tensor2D;
    x = tf.add(x, linear(merged, layer.proj.o_proj, adapters.o_proj, scale));
    const m = rmsNorm(x, layer.mlpNorm, arch.normEps);
    const up = linear(m, layer.proj.up_proj, adapters.up_proj, scale);
    const act = tf.mul(up, tf.sigmoid(tf.mul(up, 1.702))); // GELU, sigmoid approximation
    x = tf.add(x, linear(act as tf.Tensor2D, layer.proj.down_proj, adapters.down_proj, scale));
  });
  return { hidden: x, cache };
}

/** Next-token logits of hidden states [n, d] → [n, vocab]. */
export function logits(model: TransformerModel, hidden: tf.Tensor2D): tf.Tensor2D {
  return mm(rmsNorm(hidden, model.weights.finalNorm, model.arch.normEps), model.weights.lmHead as tf.Tensor2D);
}

/** Causal mask for rows that are left-padded by `padLeft[b]` columns, with `pastLength` cached positions before. */
export function causalMask(batchSize: number, length: number, padLeft: number[], pastLength = 0): Float32Array {
  const keys = pastLength + length;
  const mask = new Float32Array(batchSize * length * keys);
  for (let b = 0; b < batchSize; b++) {
    for (let t = 0; t < length; t++) {
      const query = pastLength + t;
      const row = (b * length + t) * keys;
      for (let k = 0; k < keys; k++) {
        // A padding query may see only itself, so its softmax stays finite; real queries see real keys up to themselves.
        const visible = k <= query && (k >= padLeft[b] || k === query);
        if (!visible) mask[row + k] = NEG;
      }
    }
  }
  return mask;
}
