// The tfjs executor of the Qwen-VL vision towers (vision-ops.ts): rows [N, n] as 2-D tensors, the call's VisionLayout
// as constants. Attention runs over each run of consecutive equal-length segments as one batched product
// ([count, heads, len, hd]): a windowed block's full windows share one product, and so do the images of a chess
// episode, which are all the same size. Every op is differentiable except the two gathers (Qwen3-VL's position taps
// and Qwen2.5-VL's return to image order), whose gradient needs UnsortedSegmentSum, which the WASM backend lacks:
// no gradient is taken through the towers (LoRA trains the language model).
import * as tf from '@tensorflow/tfjs';
import { activate } from '../layers/mlp.ts';
import { rmsNorm } from '../layers/rms-norm.ts';
import type { QwenVisionActivation } from './config.ts';
import { type Segments, towerRows, type VisionLayout } from './vision-layout.ts';
import type { AttentionScope, QwenLayerNorm, QwenLinear, QwenVisionOps } from './vision-ops.ts';

/** Runs of consecutive segments of one length: rows [start, start + count · len). */
function equalRuns(cu: Segments): { start: number; count: number; len: number }[] {
  const runs: { start: number; count: number; len: number }[] = [];
  for (let s = 0; s + 1 < cu.length; s++) {
    const len = cu[s + 1] - cu[s];
    const last = runs[runs.length - 1];
    if (last && last.len === len) last.count++;
    else runs.push({ start: cu[s], count: 1, len });
  }
  return runs;
}

class TfjsQwenVisionOps implements QwenVisionOps<tf.Tensor2D> {
  private readonly cos: tf.Tensor3D; // [N, 1, hd]
  private readonly sin: tf.Tensor3D;

  constructor(
    private readonly pixels: tf.Tensor2D,
    private readonly layout: VisionLayout,
  ) {
    const { rows, headDim } = layout;
    this.cos = tf.tensor3d(layout.cos, [rows, 1, headDim]);
    this.sin = tf.tensor3d(layout.sin, [rows, 1, headDim]);
  }

  patchEmbed(w: QwenLinear): tf.Tensor2D {
    return this.linear(this.pixels, w);
  }

  positionEmbedding(table: tf.Tensor2D): tf.Tensor2D {
    const taps = this.layout.positionTaps;
    if (!taps) throw new Error('internal: this tower has no position taps');
    const n = this.layout.rows;
    let sum: tf.Tensor2D | null = null;
    for (let j = 0; j < 4; j++) {
      const rows = tf.gather(table, tf.tensor1d(taps.index.subarray(j * n, (j + 1) * n), 'int32')); // [N, D]
      const term = tf.mul(rows, tf.tensor2d(taps.weight.subarray(j * n, (j + 1) * n), [n, 1])) as tf.Tensor2D;
      sum = sum ? tf.add(sum, term) : term;
    }
    return sum!;
  }

  rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D {
    return rmsNorm(x, weight, eps, 'w');
  }

  layerNorm(x: tf.Tensor2D, w: QwenLayerNorm, eps: number): tf.Tensor2D {
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, eps))), w.weight), w.bias) as tf.Tensor2D;
  }

  linear(x: tf.Tensor2D, w: QwenLinear): tf.Tensor2D {
    const y = tf.matMul(x, w.weight) as tf.Tensor2D;
    return w.bias ? (tf.add(y, w.bias) as tf.Tensor2D) : y;
  }

  columns(x: tf.Tensor2D, start: number, width: number): tf.Tensor2D {
    return tf.slice(x, [0, start], [x.shape[0], width]);
  }

  rotary(x: tf.Tensor2D, heads: number): tf.Tensor2D {
    const [n, width] = x.shape;
    const hd = width / heads;
    const h = tf.reshape(x, [n, heads, hd]); // [N, heads·hd] → [N, heads, hd]; cos / sin [N, 1, hd] broadcast
    const rotated = tf.concat(
      [tf.neg(tf.slice(h, [0, 0, hd / 2], [n, heads, hd / 2])), tf.slice(h, [0, 0, 0], [n, heads, hd / 2])],
      2,
    );
    return tf.reshape(tf.add(tf.mul(h, this.cos), tf.mul(rotated, this.sin)), [n, width]);
  }

  attention(
    q: tf.Tensor2D,
    k: tf.Tensor2D,
    v: tf.Tensor2D,
    heads: number,
    scale: number,
    scope: AttentionScope,
  ): tf.Tensor2D {
    const cu = scope === 'window' ? this.layout.segments.window : this.layout.segments.image;
    if (!cu) throw new Error('internal: this tower has no attention windows');
    const width = q.shape[1];
    const hd = width / heads;
    const parts = equalRuns(cu).map(({ start, count, len }) => {
      // [count·len, heads·hd] → [count, heads, len, hd]
      const block = (t: tf.Tensor2D) =>
        tf.transpose(tf.reshape(tf.slice(t, [start, 0], [count * len, width]), [count, len, heads, hd]), [0, 2, 1, 3]);
      const scores = tf.mul(tf.matMul(block(q), block(k), false, true), scale); // [count, heads, len, len]
      const mixed = tf.matMul(tf.softmax(scores, -1), block(v)); // [count, heads, len, hd]
      return tf.reshape(tf.transpose(mixed, [0, 2, 1, 3]), [count * len, width]) as tf.Tensor2D;
    });
    return parts.length === 1 ? parts[0] : tf.concat(parts, 0);
  }

  activation(x: tf.Tensor2D, act: QwenVisionActivation): tf.Tensor2D {
    if (act === 'gelu') return tf.mul(tf.mul(x, 0.5), tf.add(1, tf.erf(tf.mul(x, Math.SQRT1_2))));
    return activate(x, act) as tf.Tensor2D;
  }

  mul(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
    return tf.mul(a, b);
  }

  add(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
    return tf.add(a, b);
  }

  mergeUnits(x: tf.Tensor2D, unit: number, width: number): tf.Tensor2D {
    return tf.reshape(x, [x.shape[0] / unit, unit * width]);
  }

  imageOrder(x: tf.Tensor2D): tf.Tensor2D {
    const restore = this.layout.restore;
    return restore ? tf.gather(x, tf.tensor1d(restore, 'int32')) : x;
  }

  layer(x: tf.Tensor2D, f: (x: tf.Tensor2D) => tf.Tensor2D): tf.Tensor2D {
    const out = tf.tidy(() => f(x));
    x.dispose();
    return out;
  }
}

/**
 * Run a tower definition on tfjs for one call: the pixel rows [rows, width] (image processor order) put in the
 * layout's order, the definition run in a tidy scope, its result kept.
 */
export function runTfjsTower<R extends tf.TensorContainer>(
  pixels: Float32Array,
  width: number,
  layout: VisionLayout,
  tower: (ops: QwenVisionOps<tf.Tensor2D>) => R,
): R {
  return tf.tidy(() => {
    const rows = tf.tensor2d(towerRows(pixels, width, layout), [layout.rows, width]);
    return tower(new TfjsQwenVisionOps(rows, layout));
  });
}
