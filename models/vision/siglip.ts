// The SigLIP vision transformer that both Hugging Face vision-language models here use: Gemma 3's vision tower
// (SiglipVisionModel, weights `vision_tower.vision_model.*` on disk) and Idefics3/SmolVLM's (Idefics3VisionTransformer,
// `model.vision_model.*`), which differ only in how patches find their position embedding.
// The tower is written once, siglipTower over SiglipOps, and run by two executors: the tfjs one here
// (every op differentiable, so gradients flow through it when a caller wants them) and models/onnx/hf/siglip-graph.ts,
// which emits it as an ONNX graph for the ONNX Runtime engine.
//
//   pixels [N, C, H, W] -> patches [N·L, C·P·P] @ W_patch + b     (the Conv2d with stride = kernel = P, L = (H/P)(W/P))
//   + position_embedding[position_ids]                          (row-major patch order)
//   × num_hidden_layers:  h += out_proj(attn(LN1(h)));  h += fc2(gelu_tanh(fc1(LN2(h))))   (pre-LN, no mask)
//   post_layernorm(h) -> last_hidden_state [N, L, D]
//
// Linear weights arrive as nn.Linear's [out, in] and are stored transposed ([in, out]) so every product is a plain
// x @ W (the fast path of the WASM backend).
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../core/errors.ts';
import { patchesPerSide, type VisionConfig } from './vision-config.ts';

/** A float32 tensor read from a checkpoint (what models/safetensors.ts and the sharded loader return). */
export interface HostTensor {
  shape: number[];
  data: Float32Array;
}
/** Look a tensor up by its on-disk name (undefined when absent). */
export type TensorLookup = (name: string) => HostTensor | undefined;

export interface LayerNormWeights {
  weight: tf.Tensor1D;
  bias: tf.Tensor1D;
}
export interface LinearWeights {
  /** [in, out] */
  weight: tf.Tensor2D;
  bias: tf.Tensor1D;
}
interface SiglipLayerWeights {
  layerNorm1: LayerNormWeights;
  q: LinearWeights;
  k: LinearWeights;
  v: LinearWeights;
  out: LinearWeights;
  layerNorm2: LayerNormWeights;
  fc1: LinearWeights;
  fc2: LinearWeights;
}
export interface SiglipWeights {
  /** The Conv2d kernel as a matrix: [C·P·P, D], rows in (channel, row in patch, column in patch) order. */
  patch: LinearWeights;
  /** [num_positions, D] */
  position: tf.Tensor2D;
  layers: SiglipLayerWeights[];
  postLayerNorm: LayerNormWeights;
}

/** On-disk prefixes of the vision transformer in the two checkpoint layouts. */
export const SIGLIP_PREFIX = {
  idefics3: 'model.vision_model.',
  gemma3: 'vision_tower.vision_model.',
} as const;

/**
 * Read the tower's weights (names `${prefix}embeddings.patch_embedding.weight`, ...), checking every shape against the
 * config. `source` names the checkpoint file in errors.
 */
export function loadSiglipWeights(
  get: TensorLookup,
  prefix: string,
  config: VisionConfig,
  source = 'model.safetensors',
): SiglipWeights {
  const D = config.hiddenSize;
  const C = config.numChannels;
  const P = config.patchSize;
  const take = (name: string, shape: number[]): HostTensor => {
    const t = get(prefix + name);
    if (!t) throw new UserError(`${source}: tensor ${prefix + name} is missing`);
    if (t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
      throw new UserError(`${source}: tensor ${prefix + name} has shape [${t.shape}], config.json implies [${shape}]`);
    }
    return t;
  };
  const vector = (name: string, n: number) => tf.tensor1d(take(name, [n]).data);
  const linear = (name: string, inDim: number, outDim: number): LinearWeights => ({
    weight: transposed(take(`${name}.weight`, [outDim, inDim]).data, outDim, inDim),
    bias: vector(`${name}.bias`, outDim),
  });
  const norm = (name: string): LayerNormWeights => ({
    weight: vector(`${name}.weight`, D),
    bias: vector(`${name}.bias`, D),
  });
  const numPositions = patchesPerSide(config) ** 2;
  // Conv2d weight [D, C, P, P] is, row-major, the matrix [D, C·P·P]; transposed it maps a flattened patch to D.
  const patchKernel = take('embeddings.patch_embedding.weight', [D, C, P, P]).data;
  const layers: SiglipLayerWeights[] = [];
  for (let i = 0; i < config.numHiddenLayers; i++) {
    const p = `encoder.layers.${i}.`;
    layers.push({
      layerNorm1: norm(`${p}layer_norm1`),
      q: linear(`${p}self_attn.q_proj`, D, D),
      k: linear(`${p}self_attn.k_proj`, D, D),
      v: linear(`${p}self_attn.v_proj`, D, D),
      out: linear(`${p}self_attn.out_proj`, D, D),
      layerNorm2: norm(`${p}layer_norm2`),
      fc1: linear(`${p}mlp.fc1`, D, config.intermediateSize),
      fc2: linear(`${p}mlp.fc2`, config.intermediateSize, D),
    });
  }
  return {
    patch: { weight: transposed(patchKernel, D, C * P * P), bias: vector('embeddings.patch_embedding.bias', D) },
    position: tf.tensor2d(take('embeddings.position_embedding.weight', [numPositions, D]).data, [numPositions, D]),
    layers,
    postLayerNorm: norm('post_layernorm'),
  };
}

/** Free the tower's tensors. */
export function disposeSiglip(weights: SiglipWeights): void {
  const all: tf.Tensor[] = [
    weights.patch.weight,
    weights.patch.bias,
    weights.position,
    weights.postLayerNorm.weight,
    weights.postLayerNorm.bias,
  ];
  for (const l of weights.layers) {
    all.push(l.layerNorm1.weight, l.layerNorm1.bias, l.layerNorm2.weight, l.layerNorm2.bias);
    for (const lin of [l.q, l.k, l.v, l.out, l.fc1, l.fc2]) all.push(lin.weight, lin.bias);
  }
  tf.dispose(all);
}

/** Towers whose projection weights went to ONNX Runtime (releaseSiglipProjections): siglipForward refuses them. */
const released = new WeakSet<SiglipWeights>();

/**
 * Free the tower's projection weights (the patch embedding and every layer's q, k, v, out, fc1, fc2), once an ONNX
 * Runtime tower holds them in its own weight file: the host no longer keeps a second copy. Norms, biases and the
 * position table stay (small, and inline in the graph).
 */
export function releaseSiglipProjections(weights: SiglipWeights): void {
  const all: tf.Tensor[] = [weights.patch.weight];
  for (const l of weights.layers) for (const lin of [l.q, l.k, l.v, l.out, l.fc1, l.fc2]) all.push(lin.weight);
  tf.dispose(all);
  released.add(weights);
}

/** A row-major [rows, cols] matrix transposed into a [cols, rows] tensor. */
function transposed(data: Float32Array, rows: number, cols: number): tf.Tensor2D {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return tf.tensor2d(out, [cols, rows]);
}

/**
 * Idefics3VisionEmbeddings' position ids for an nh × nw grid of real patches: each patch's fractional coordinate
 * (i / nh, j / nw) is bucketized into the perSide × perSide table (torch.arange / bucketize(right=True) in float32).
 * A full image (nh = nw = perSide) gets 0 .. perSide²-1, the same as SigLIP's plain arange.
 */
export function idefics3PositionIds(nh: number, nw: number, perSide: number): Int32Array {
  const f32 = Math.fround;
  // torch.arange(1/perSide, 1.0, 1/perSide): start + k·step in double, stored as float32.
  const step = 1 / perSide;
  const boundaries: number[] = [];
  for (let k = 0; step + k * step < 1; k++) boundaries.push(f32(step + k * step));
  const buckets = (n: number): number[] => {
    // torch.arange(0, 1 - 1e-6, 1/n) in float32; bucketize(right=True) = how many boundaries are <= the value.
    const s = 1 / n;
    const out: number[] = [];
    for (let i = 0; i * s < 1 - 1e-6; i++) {
      const v = f32(i * s);
      out.push(boundaries.filter((b) => b <= v).length);
    }
    return out;
  };
  const bh = buckets(nh);
  const bw = buckets(nw);
  const ids = new Int32Array(bh.length * bw.length);
  for (let i = 0; i < bh.length; i++)
    for (let j = 0; j < bw.length; j++) ids[i * bw.length + j] = bh[i] * perSide + bw[j];
  return ids;
}

/**
 * Rows `ids` of the position table: a slice when they are 0..L-1 (SigLIP, full Idefics3 images), else a one-hot
 * product. Both have gradients on every backend (gather's needs UnsortedSegmentSum, which the WASM backend lacks).
 */
function positionRows(table: tf.Tensor2D, ids: Int32Array): tf.Tensor2D {
  if (ids.every((id, i) => id === i)) return tf.slice(table, [0, 0], [ids.length, table.shape[1]]);
  const rows = table.shape[0];
  const onehot = new Float32Array(ids.length * rows);
  ids.forEach((id, i) => (onehot[i * rows + id] = 1));
  return tf.matMul(tf.tensor2d(onehot, [ids.length, rows]), table);
}

function layerNorm(x: tf.Tensor2D, w: LayerNormWeights, eps: number): tf.Tensor2D {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, eps))), w.weight), w.bias);
}

function linear(x: tf.Tensor2D, w: LinearWeights): tf.Tensor2D {
  return tf.add(tf.matMul(x, w.weight), w.bias);
}

/** GELU: the tanh approximation (gelu_pytorch_tanh) or the exact erf form. */
function gelu(x: tf.Tensor2D, kind: 'gelu_tanh' | 'gelu'): tf.Tensor2D {
  if (kind === 'gelu') return tf.mul(tf.mul(x, 0.5), tf.add(1, tf.erf(tf.mul(x, Math.SQRT1_2))));
  const inner = tf.mul(tf.add(x, tf.mul(tf.pow(x, 3), 0.044715)), Math.sqrt(2 / Math.PI));
  return tf.mul(tf.mul(x, 0.5), tf.add(1, tf.tanh(inner)));
}

/**
 * How an engine runs the tower's steps: values are [N·L, D] rows (N images of L patches, image-major) for every op but
 * attention's inside. What the tower computes, and in which order, is siglipTower's; how, the executor's.
 */
export interface SiglipOps<T> {
  /** The patch embedding plus the position rows: [N·L, D]. */
  embed(): T;
  layerNorm(x: T, w: LayerNormWeights, eps: number): T;
  /** x @ W + b. */
  linear(x: T, w: LinearWeights): T;
  /** softmax(q kᵀ · scale) v within each image, head by head (no mask); q, k, v and the result [N·L, heads · hd]. */
  attention(q: T, k: T, v: T, heads: number, scale: number): T;
  gelu(x: T, kind: VisionConfig['hiddenAct']): T;
  add(a: T, b: T): T;
  /** One encoder layer applied to `x` (tfjs: in a scope of its own, which frees the layer's intermediates). */
  layer(x: T, f: (x: T) => T): T;
}

/**
 * The SigLIP encoder, written once: embeddings, then per layer h += out_proj(attn(LN1(h))); h += fc2(act(fc1(LN2(h)))),
 * then post_layernorm. Returns the last hidden state [N·L, D].
 */
export function siglipTower<T>(ops: SiglipOps<T>, weights: SiglipWeights, config: VisionConfig): T {
  const eps = config.layerNormEps;
  const heads = config.numAttentionHeads;
  const scale = (config.hiddenSize / heads) ** -0.5;
  let h = ops.embed();
  for (const layer of weights.layers) {
    h = ops.layer(h, (x) => {
      const n1 = ops.layerNorm(x, layer.layerNorm1, eps);
      const attended = ops.attention(
        ops.linear(n1, layer.q),
        ops.linear(n1, layer.k),
        ops.linear(n1, layer.v),
        heads,
        scale,
      );
      const a = ops.add(x, ops.linear(attended, layer.out));
      const mlp = ops.linear(
        ops.gelu(ops.linear(ops.layerNorm(a, layer.layerNorm2, eps), layer.fc1), config.hiddenAct),
        layer.fc2,
      );
      return ops.add(a, mlp);
    });
  }
  return ops.layerNorm(h, weights.postLayerNorm, eps);
}

/** The tfjs executor of siglipTower for `n` images of `length` patches whose embedded rows `embed` makes. */
class TfjsSiglipOps implements SiglipOps<tf.Tensor2D> {
  constructor(
    private readonly n: number,
    private readonly length: number,
    readonly embed: () => tf.Tensor2D,
  ) {}

  layerNorm(x: tf.Tensor2D, w: LayerNormWeights, eps: number): tf.Tensor2D {
    return layerNorm(x, w, eps);
  }

  linear(x: tf.Tensor2D, w: LinearWeights): tf.Tensor2D {
    return linear(x, w);
  }

  /**
   * One image and one head at a time with plain 2-D products on an explicitly transposed key block: on the WASM
   * backend the batched product [N·H, L, hd] is several times slower.
   */
  attention(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, heads: number, scale: number): tf.Tensor2D {
    const { n, length } = this;
    const hd = q.shape[1] / heads;
    const images: tf.Tensor2D[] = [];
    for (let img = 0; img < n; img++) {
      const perHead: tf.Tensor2D[] = [];
      for (let h = 0; h < heads; h++) {
        const block = (t: tf.Tensor2D) => tf.slice(t, [img * length, h * hd], [length, hd]); // [L, hd]
        const scores = tf.mul(tf.matMul(block(q), tf.transpose(block(k))), scale); // [L, L]
        perHead.push(tf.matMul(tf.softmax(scores, -1), block(v))); // [L, hd]
      }
      images.push(heads === 1 ? perHead[0] : tf.concat(perHead, 1)); // [L, D]
    }
    return n === 1 ? images[0] : tf.concat(images, 0); // [N·L, D]
  }

  gelu(x: tf.Tensor2D, kind: VisionConfig['hiddenAct']): tf.Tensor2D {
    return gelu(x, kind);
  }

  add(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
    return tf.add(a, b);
  }

  layer(x: tf.Tensor2D, f: (x: tf.Tensor2D) => tf.Tensor2D): tf.Tensor2D {
    // One tidy per layer: a 512 px image's per-head score matrices ([L, L] = 4 MB each, L = 1024) and MLP activations
    // come to ~200 MB a layer, and held for all 12 layers they overflowed the WASM heap next to the model's weights.
    // (Under a gradient tape tfjs keeps its own copies of what the backward pass needs, so this is safe there too.)
    const out = tf.tidy(() => f(x));
    x.dispose();
    return out;
  }
}

/**
 * Patch embedding: pixels [N, C, H, W] -> [N·L, D]. The Conv2d (stride = kernel = P) is one product per patch, so the
 * pixels are regrouped patch by patch, each flattened as (channel, row, column) like the kernel. Transposes stay at
 * rank 4 (the WASM backend's fast transposes).
 */
function embedPatches(pixels: tf.Tensor4D, weights: SiglipWeights, config: VisionConfig): tf.Tensor2D {
  const [N, C, H, W] = pixels.shape;
  const P = config.patchSize;
  const nh = H / P;
  const nw = W / P;
  const a = tf.reshape(pixels, [N * C * nh, P, nw, P]); // [N·C·nh, py, nw, px]
  const b = tf.transpose(a, [0, 2, 1, 3]); // [N·C·nh, nw, py, px]
  const c = tf.transpose(tf.reshape(b, [N, C, nh * nw, P * P]), [0, 2, 1, 3]); // [N, L, C, P·P]
  return linear(tf.reshape(c, [N * nh * nw, C * P * P]), weights.patch); // [N·L, D]
}

/**
 * The vision transformer's last hidden state (after post_layernorm): [N, L, D], L = (H/P)·(W/P) patches in row-major
 * order. `positionIds` (length L) default to 0..L-1 (SigLIP; Idefics3 on a full image); pass idefics3PositionIds for
 * other Idefics3 grids.
 */
export function siglipForward(
  weights: SiglipWeights,
  config: VisionConfig,
  pixels: tf.Tensor4D,
  positionIds?: Int32Array,
): tf.Tensor3D {
  if (released.has(weights))
    throw new Error('internal: the tfjs vision tower ran after its weights were released to ONNX Runtime');
  const [N, C, H, W] = pixels.shape;
  const P = config.patchSize;
  if (C !== config.numChannels || H % P !== 0 || W % P !== 0) {
    throw new Error(
      `siglipForward: pixel values [${pixels.shape}] do not fit ${config.numChannels} channels and patch ${P}`,
    );
  }
  const L = (H / P) * (W / P);
  const ids = positionIds ?? Int32Array.from({ length: L }, (_, i) => i);
  if (ids.length !== L) throw new Error(`siglipForward: ${ids.length} position ids for ${L} patches`);
  if (ids.some((id) => id < 0 || id >= weights.position.shape[0]))
    throw new Error(`siglipForward: a position id is outside the ${weights.position.shape[0]}-row table`);
  return tf.tidy(() => {
    const D = config.hiddenSize;
    // Patch rows plus position rows: [N, L, D] + [L, D], as [N·L, D].
    const embed = () =>
      tf.reshape(
        tf.add(tf.reshape(embedPatches(pixels, weights, config), [N, L, D]), positionRows(weights.position, ids)),
        [N * L, D],
      ) as tf.Tensor2D;
    return tf.reshape(siglipTower(new TfjsSiglipOps(N, L, embed), weights, config), [N, L, D]);
  });
}
