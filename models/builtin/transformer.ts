// The built-in model's tfjs forward pass: the tfjs executor of its one definition (models/builtin/model-ops.ts: a
// decoder-only, pre-norm transformer with RMSNorm, rotary position embeddings, GELU MLP and an untied output head, whose
// input sequence mixes character tokens and image patches). One function serves training, prompt prefill, scoring and
// cached incremental decoding; the ONNX Runtime engine executes the same definition (models/onnx/builtin/builtin-graph.ts,
// builtin-train-graph.ts) and is tested against this one.
//
// Layout, chosen for the tfjs WASM backend (whose only fast kernel is the plain 2-D matrix product; batched or
// transposed products, gathers and unstacks are one to three orders of magnitude slower there):
// - Sequences are packed: every new position of every sequence is one row of a [rows, d] matrix, so all projections
//   are single 2-D products and nothing is padded on the left.
// - Rows come in groups: `count` sequences of `length` new positions each that may share keys/values computed
//   earlier (`shared`: their common prompt; G completions of one prompt form one group) and may have their own
//   earlier keys (`past`: tokens already decoded). Attention is computed per group with heads laid out as rows: the
//   query of head h is the query masked to head h's dimensions, so one 2-D product against all keys gives every
//   head's scores, and the prompt's keys are multiplied once for the whole group instead of once per completion.
// - Token embeddings are a one-hot product and image patches enter through a gather with a hand-written gradient,
//   so the backward pass never needs UnsortedSegmentSum (absent in WASM).
import * as tf from '@tensorflow/tfjs';
import { headDim, patchDim, patchesPerImage, type Architecture } from './config.ts';
import { linear, type LoraSet } from './lora.ts';
import { customGrad, mm, selectRows } from '../ops.ts';
import type { LayerWeights, ModelWeights, Projection } from './weights.ts';
import { block, embed, head, type BuiltinOps, type Weight } from './model-ops.ts';

/** Keys (RoPE applied, transposed) and values of a shared prompt for one layer: kT [d, P], v [P, d]. */
export interface SharedKV {
  kT: tf.Tensor2D;
  v: tf.Tensor2D;
}

/** A group's own keys and values for one layer: [count, positions so far, d]. */
interface OwnKV {
  k: tf.Tensor3D;
  v: tf.Tensor3D;
}

export interface Group {
  /** First packed row of the group; its rows are sequence by sequence, `length` rows each. */
  start: number;
  count: number;
  length: number;
  /** Per layer: keys/values every sequence of the group attends to before its own (the prompt), or null. */
  shared: SharedKV[] | null;
  /** Per layer: each sequence's own earlier keys/values (decoding), or null. */
  past: OwnKV[] | null;
}

/** One image occurrence: which distinct image, and the packed row of its first patch token. */
interface ImageSlot {
  image: number;
  start: number;
}

export interface PackedBatch {
  /** Token id of every packed row. */
  tokens: Int32Array;
  /** RoPE position of every packed row. */
  positions: Int32Array;
  /** Distinct images (each [patchesPerImage * patchDim] in [0, 1]) and where they occur. */
  images: Float32Array[];
  slots: ImageSlot[];
  groups: Group[];
}

export interface TransformerModel {
  arch: Architecture;
  weights: ModelWeights;
}

export interface ForwardResult {
  /** Final hidden states before the output norm, [rows, d]. */
  hidden: tf.Tensor2D;
  /** Per layer: every packed row's key (RoPE applied) and value, [rows, d]; for building SharedKV. */
  keys: tf.Tensor2D[];
  values: tf.Tensor2D[];
  /** Per layer, per group: own keys/values including this pass (the next decoding step's `past`). */
  own: OwnKV[][];
}

export { NEG, ropeValues } from './rope.ts';
import { NEG, ropeValues, rotationValues } from './rope.ts';

/** The same as tensors [rows, d] (the ONNX Runtime engine feeds ropeValues to its graph instead). */
export function ropeTables(arch: Architecture, positions: Int32Array): { cos: tf.Tensor2D; sin: tf.Tensor2D } {
  const { cos, sin } = ropeValues(arch, positions);
  return {
    cos: tf.tensor2d(cos, [positions.length, arch.dModel]),
    sin: tf.tensor2d(sin, [positions.length, arch.dModel]),
  };
}

const constantCache = new Map<string, tf.Variable>();

/** A frozen variable holding a constant: kept across tidy scopes, and ops.mm skips its gradient. */
function constant(key: string, make: () => tf.Tensor): tf.Variable {
  let v = constantCache.get(key);
  if (!v || v.isDisposed) {
    v = tf.variable(make(), false);
    constantCache.set(key, v);
  }
  return v;
}

/** rotationValues as a frozen variable (kept across tidy scopes). */
function rotationMatrix(arch: Architecture): tf.Variable {
  return constant(`rot:${arch.dModel}:${headDim(arch)}`, () =>
    tf.tensor2d(rotationValues(arch), [arch.dModel, arch.dModel]),
  );
}

/** [1, H, d]: row h is 1 on head h's dimensions. */
function headMask(arch: Architecture): tf.Variable {
  const d = arch.dModel;
  const dh = headDim(arch);
  return constant(`heads:${d}:${dh}`, () => {
    const m = new Float32Array(arch.nHeads * d);
    for (let h = 0; h < arch.nHeads; h++) m.fill(1, h * d + h * dh, h * d + (h + 1) * dh);
    return tf.tensor3d(m, [1, arch.nHeads, d]);
  });
}

function applyRope(x: tf.Tensor2D, cos: tf.Tensor2D, sin: tf.Tensor2D, r: tf.Variable): tf.Tensor2D {
  return tf.add(tf.mul(x, cos), tf.mul(mm(x, r as tf.Tensor2D), sin));
}

function rmsNorm(x: tf.Tensor2D, gain: tf.Variable, eps: number): tf.Tensor2D {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), gain);
}

/**
 * Additive mask for a group's own keys, rows (sequence i, position c, head h), columns (sequence j, key c'):
 * visible when i = j and c' ≤ pastLength + c.
 */
function ownMask(count: number, length: number, keys: number, heads: number, pastLength: number): tf.Tensor2D {
  const cols = count * keys;
  const m = new Float32Array(count * length * heads * cols).fill(NEG);
  for (let i = 0; i < count; i++) {
    for (let c = 0; c < length; c++) {
      for (let h = 0; h < heads; h++) {
        const row = ((i * length + c) * heads + h) * cols + i * keys;
        m.fill(0, row, row + pastLength + c + 1);
      }
    }
  }
  return tf.tensor2d(m, [count * length * heads, cols]);
}

/** Query rows from which a group's prompt scores are computed head by head (see groupAttention). */
const PER_HEAD_MIN_ROWS = Number(process.env.METRL_PER_HEAD_MIN_ROWS ?? 64);

/**
 * Attention of one group. q, k, v: this pass's rows of the group ([count * length, d], q already scaled).
 * Returns the attended values [count * length, d] and the group's own keys/values including this pass.
 */
function groupAttention(
  arch: Architecture,
  group: Group,
  layer: number,
  q: tf.Tensor2D,
  k: tf.Tensor2D,
  v: tf.Tensor2D,
  mask: tf.Tensor2D,
): { out: tf.Tensor2D; own: OwnKV } {
  const { count: n, length: C } = group;
  const d = arch.dModel;
  const H = arch.nHeads;
  const heads = headMask(arch);
  const qHeads = tf.reshape(tf.mul(tf.reshape(q, [n * C, 1, d]), heads), [n * C * H, d]) as tf.Tensor2D;
  const past = group.past?.[layer] ?? null;
  const pastLength = past ? past.k.shape[1] : 0;
  const keys = pastLength + C;
  const own: OwnKV = {
    k: past
      ? tf.concat([past.k, tf.reshape(k, [n, C, d]) as tf.Tensor3D], 1)
      : (tf.reshape(k, [n, C, d]) as tf.Tensor3D),
    v: past
      ? tf.concat([past.v, tf.reshape(v, [n, C, d]) as tf.Tensor3D], 1)
      : (tf.reshape(v, [n, C, d]) as tf.Tensor3D),
  };
  const ownK = tf.reshape(own.k, [n * keys, d]) as tf.Tensor2D;
  const ownV = tf.reshape(own.v, [n * keys, d]) as tf.Tensor2D;

  // A single long sequence with no shared prompt (a prompt's prefill): attention head by head on each head's own
  // dimensions, a quarter of the heads-as-rows work, which dominated prefilling many prompts.
  if (!group.shared && n === 1 && C >= PER_HEAD_MIN_ROWS) {
    const dh = d / H;
    const causal = tf.reshape(tf.slice(tf.reshape(mask, [C, H, keys]), [0, 0, 0], [C, 1, keys]), [C, keys]);
    const outs = Array.from({ length: H }, (_, h) => {
      const scores = tf.add(
        mm(tf.slice(q, [0, h * dh], [C, dh]), tf.transpose(tf.slice(ownK, [0, h * dh], [keys, dh]))),
        causal,
      );
      return mm(tf.softmax(scores) as tf.Tensor2D, tf.slice(ownV, [0, h * dh], [keys, dh]));
    });
    return { out: tf.concat(outs, 1), own };
  }

  // Own scores. Several sequences of several positions (scoring G completions): one product per sequence, as a single
  // product against all the group's keys would waste a factor `count`. Otherwise one product with a block mask.
  let ownScores: tf.Tensor2D;
  const perSequence = n > 1 && C > 1;
  if (perSequence) {
    const blocks: tf.Tensor2D[] = [];
    for (let i = 0; i < n; i++) {
      const qi = tf.slice(qHeads, [i * C * H, 0], [C * H, d]);
      const ki = tf.slice(ownK, [i * keys, 0], [keys, d]);
      blocks.push(mm(qi, tf.transpose(ki)));
    }
    ownScores = tf
      .add(tf.reshape(tf.concat(blocks, 0), [n, C * H, keys]), tf.reshape(mask, [1, C * H, keys]))
      .reshape([n * C * H, keys]);
  } else {
    ownScores = tf.add(mm(qHeads, tf.transpose(ownK)), mask);
  }
  const shared = group.shared?.[layer] ?? null;
  const prefix = shared ? shared.kT.shape[1] : 0;
  // Prompt scores. With many query rows (scoring) the product is done head by head, on each head's 48 dimensions,
  // instead of heads-as-rows against all 192 (4× the work); decoding's few rows keep the one-product form.
  const dh = d / H;
  const perHead = shared !== null && n * C >= PER_HEAD_MIN_ROWS;
  let prefixScores: tf.Tensor2D | null = null;
  if (shared && perHead) {
    const blocks = Array.from({ length: H }, (_, h) =>
      tf.reshape(mm(tf.slice(q, [0, h * dh], [n * C, dh]), tf.slice(shared.kT, [h * dh, 0], [dh, prefix])), [
        1,
        n * C,
        prefix,
      ]),
    );
    // Rows (head, position) → (position, head), the heads-as-rows order of the own scores.
    prefixScores = tf.reshape(tf.transpose(tf.concat(blocks, 0), [1, 0, 2]), [n * C * H, prefix]) as tf.Tensor2D;
  } else if (shared) {
    prefixScores = mm(qHeads, shared.kT);
  }
  const scores = prefixScores ? tf.concat([prefixScores, ownScores], 1) : ownScores;
  const probs = tf.softmax(scores) as tf.Tensor2D;
  const ownProbs = shared ? (tf.slice(probs, [0, prefix], [-1, -1]) as tf.Tensor2D) : probs;
  let mixed: tf.Tensor2D;
  if (perSequence) {
    const parts: tf.Tensor2D[] = [];
    for (let i = 0; i < n; i++) {
      parts.push(mm(tf.slice(ownProbs, [i * C * H, 0], [C * H, keys]), tf.slice(ownV, [i * keys, 0], [keys, d])));
    }
    mixed = tf.concat(parts, 0);
  } else {
    mixed = mm(ownProbs, ownV);
  }
  if (shared && !perHead) mixed = tf.add(mixed, mm(tf.slice(probs, [0, 0], [-1, prefix]) as tf.Tensor2D, shared.v));
  // Keep head h's dimensions from row h and add the heads up: the usual concatenation of head outputs.
  let out = tf.sum(tf.mul(tf.reshape(mixed, [n * C, H, d]), heads), 1) as tf.Tensor2D;
  if (shared && perHead) {
    const byHead = tf.transpose(tf.reshape(tf.slice(probs, [0, 0], [-1, prefix]), [n * C, H, prefix]), [1, 0, 2]);
    const parts = Array.from({ length: H }, (_, h) =>
      mm(
        tf.reshape(tf.slice(byHead, [h, 0, 0], [1, -1, -1]), [n * C, prefix]) as tf.Tensor2D,
        tf.slice(shared.v, [0, h * dh], [prefix, dh]),
      ),
    );
    out = tf.add(out, tf.concat(parts, 1));
  }
  return { out, own };
}

/** What travels from the tfjs executors' `qkv` to their `attention`: q (RoPE applied, scaled), k (RoPE applied), v. */
export interface TfjsQkv {
  q: tf.Tensor2D;
  k: tf.Tensor2D;
  v: tf.Tensor2D;
}

/** What a pass's row-wise steps read: its tokens, images (empty when it has none) and RoPE tables [rows, d]. */
export interface PassRows {
  tokens: Int32Array;
  images: Float32Array[];
  slots: ImageSlot[];
  rope: { cos: tf.Tensor2D; sin: tf.Tensor2D } | null;
}

/**
 * The tfjs executors of the built-in model's definition (model-ops.ts), row-wise part: rows packed [rows, d] so every
 * step is a 2-D product or element-wise op; LoRA from a LoraSet's variables (lora.ts linear: x W + ((x A) · scale) B);
 * RoPE by the rotation matrix (applyRope). Attention, and with it the layout of keys and values, is a subclass's:
 * TfjsForwardOps here (groups, shared prompts, training), decode.ts's batched decoding step.
 */
export abstract class TfjsRowOps implements BuiltinOps<tf.Tensor2D, TfjsQkv> {
  constructor(
    protected readonly arch: Architecture,
    protected readonly rows: PassRows | null,
    private readonly lora: LoraSet | null,
  ) {}

  /** One-hot rows times the table (differentiable on every backend; no UnsortedSegmentSum in the backward pass). */
  embedTokens(table: Weight): tf.Tensor2D {
    const { tokens } = this.rows!;
    const v = this.arch.vocabSize;
    const oneHot = new Float32Array(tokens.length * v);
    for (let i = 0; i < tokens.length; i++) oneHot[i * v + tokens[i]] = 1;
    return selectRows(oneHot, tokens.length, table as tf.Tensor2D);
  }

  /** The distinct images' patches, [u · patchesPerImage, patchDim]. */
  patchPixels(): tf.Tensor2D | null {
    const { images, slots } = this.rows!;
    if (slots.length === 0) return null;
    const size = patchesPerImage(this.arch) * patchDim(this.arch);
    const pixels = new Float32Array(images.length * size);
    images.forEach((img, i) => pixels.set(img, i * size));
    return tf.tensor2d(pixels, [images.length * patchesPerImage(this.arch), patchDim(this.arch)]);
  }

  patchPositions(table: Weight): tf.Tensor2D {
    return tf.tile(table, [this.rows!.images.length, 1]) as tf.Tensor2D;
  }

  /**
   * Each image is projected once; occurrences share it. The placement is a gather from [0; patch rows]; its gradient
   * gathers the output gradient back at the patch rows and sums occurrences of the same image with a small product.
   */
  placePatches(x: tf.Tensor2D, patches: tf.Tensor2D): tf.Tensor2D {
    const { images, slots, tokens } = this.rows!;
    const p = patchesPerImage(this.arch);
    const d = this.arch.dModel;
    const u = images.length;
    const occurrences = slots.length;
    const source = new Int32Array(tokens.length); // 0 = no patch here, 1 + r = patch row r
    const targets = new Int32Array(occurrences * p); // packed row of each occurrence's patches
    const selection = new Float32Array(u * occurrences); // [u, occurrences] one-hot
    slots.forEach((slot, o) => {
      for (let j = 0; j < p; j++) {
        source[slot.start + j] = 1 + slot.image * p + j;
        targets[o * p + j] = slot.start + j;
      }
      selection[slot.image * occurrences + o] = 1;
    });
    const place = customGrad((rows: tf.Tensor) => ({
      value: tf.gather(tf.concat([tf.zeros([1, d]), rows as tf.Tensor2D], 0), tf.tensor1d(source, 'int32')),
      gradFunc: (dy: tf.Tensor) => {
        const perOccurrence = tf.reshape(tf.gather(dy, tf.tensor1d(targets, 'int32')), [
          occurrences,
          p * d,
        ]) as tf.Tensor2D;
        return tf.reshape(tf.matMul(tf.tensor2d(selection, [u, occurrences]), perOccurrence), [u * p, d]);
      },
    }));
    return tf.add(x, place(patches));
  }

  subScalar(x: tf.Tensor2D, c: number): tf.Tensor2D {
    return tf.sub(x, c);
  }

  project(x: tf.Tensor2D, w: Weight): tf.Tensor2D {
    return mm(x, w as tf.Tensor2D);
  }

  linear(x: tf.Tensor2D, w: Weight, layer: number, projection: Projection): tf.Tensor2D {
    return linear(x, w, this.lora?.layers[layer]?.[projection], this.lora?.scale ?? 0);
  }

  addBias(x: tf.Tensor2D, b: Weight): tf.Tensor2D {
    return tf.add(x, b);
  }

  add(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
    return tf.add(a, b);
  }

  rmsNorm(x: tf.Tensor2D, gain: Weight, eps: number): tf.Tensor2D {
    return rmsNorm(x, gain as tf.Variable, eps);
  }

  sigmoidGelu(x: tf.Tensor2D, k: number): tf.Tensor2D {
    return tf.mul(x, tf.sigmoid(tf.mul(x, k)));
  }

  qkv(h: tf.Tensor2D, w: LayerWeights, layer: number, qScale: number): TfjsQkv {
    const { cos, sin } = this.rows!.rope!;
    const r = rotationMatrix(this.arch);
    return {
      q: tf.mul(applyRope(this.linear(h, w.proj.q_proj, layer, 'q_proj'), cos, sin, r), qScale),
      k: applyRope(this.linear(h, w.proj.k_proj, layer, 'k_proj'), cos, sin, r),
      v: this.linear(h, w.proj.v_proj, layer, 'v_proj'),
    };
  }

  abstract attention(qkv: TfjsQkv, layer: number): tf.Tensor2D;
}

/** The forward pass's attention: group by group (groupAttention); keeps each layer's keys, values and own caches. */
class TfjsForwardOps extends TfjsRowOps {
  /** The last attention's keys and values [rows, d] and each group's own keys/values (ForwardResult's, per layer). */
  keys: tf.Tensor2D | null = null;
  values: tf.Tensor2D | null = null;
  own: OwnKV[] = [];

  constructor(
    arch: Architecture,
    rows: PassRows | null,
    lora: LoraSet | null,
    private readonly groups: Group[],
    private readonly masks: tf.Tensor2D[],
  ) {
    super(arch, rows, lora);
  }

  attention({ q, k, v }: TfjsQkv, layer: number): tf.Tensor2D {
    this.keys = k;
    this.values = v;
    const outs: tf.Tensor2D[] = [];
    this.own = [];
    this.groups.forEach((group, g) => {
      const rows = group.count * group.length;
      const result = tf.tidy(() => {
        const slice = (t: tf.Tensor2D) =>
          this.groups.length === 1 ? t : (tf.slice(t, [group.start, 0], [rows, -1]) as tf.Tensor2D);
        return groupAttention(
          this.arch,
          group,
          layer,
          slice(q),
          slice(k),
          slice(v),
          this.masks[g],
        ) as unknown as tf.TensorContainer;
      }) as unknown as { out: tf.Tensor2D; own: OwnKV };
      outs.push(result.out);
      this.own.push(result.own);
    });
    return outs.length === 1 ? outs[0] : tf.concat(outs, 0);
  }
}

export function forward(model: TransformerModel, batch: PackedBatch, lora: LoraSet | null): ForwardResult {
  const { arch, weights } = model;
  // Each group's own-key mask is the same in every layer: build it once, outside the per-layer scopes.
  const masks = batch.groups.map((g) => {
    const past = g.past?.[0]?.k.shape[1] ?? 0;
    const perSequence = g.count > 1 && g.length > 1;
    return perSequence
      ? ownMask(1, g.length, past + g.length, arch.nHeads, past)
      : ownMask(g.count, g.length, past + g.length, arch.nHeads, past);
  });
  const rows: PassRows = {
    tokens: batch.tokens,
    images: batch.images,
    slots: batch.slots,
    rope: ropeTables(arch, batch.positions),
  };
  const ops = new TfjsForwardOps(arch, rows, lora, batch.groups, masks);
  let x = embed(ops, weights);
  const keys: tf.Tensor2D[] = [];
  const values: tf.Tensor2D[] = [];
  const own: OwnKV[][] = [];
  weights.layers.forEach((layer, i) => {
    // One scope per layer (and per group): intermediates the backward pass does not keep are freed as soon as the
    // layer is done, instead of at the end of the whole pass (tfjs keeps what gradients need on its own).
    const input = x;
    const step = tf.tidy(() => {
      const out = block(ops, arch, layer, i, input);
      return { x: out, k: ops.keys!, v: ops.values!, own: ops.own } as unknown as tf.TensorContainer;
    }) as unknown as { x: tf.Tensor2D; k: tf.Tensor2D; v: tf.Tensor2D; own: OwnKV[] };
    x = step.x;
    keys.push(step.k);
    values.push(step.v);
    own.push(step.own);
  });
  return { hidden: x, keys, values, own };
}

/** Next-token logits of hidden states [n, d] → [n, vocab]. */
export function logits(model: TransformerModel, hidden: tf.Tensor2D): tf.Tensor2D {
  return head(new TfjsForwardOps(model.arch, null, null, [], []), model.arch, model.weights, hidden);
}

/** The shared keys/values of rows [start, start + length) of a forward pass: a prompt, for the groups that follow it. */
export function sharedFrom(result: ForwardResult, start: number, length: number): SharedKV[] {
  return result.keys.map((k, i) => ({
    kT: tf.transpose(tf.slice(k, [start, 0], [length, -1])) as tf.Tensor2D,
    v: tf.slice(result.values[i], [start, 0], [length, -1]) as tf.Tensor2D,
  }));
}
