// Matrix products shaped for the tfjs WASM backend. Its fast path (XNNPACK) covers only plain 2-D products A·B:
// transposed operands and batched products fall to a loop that is 10-30× slower (measured: 25 GFLOP/s against
// 1-3 GFLOP/s on a 512² product). tfjs's own gradient of matMul uses transposed products, so these ops carry
// hand-written gradients that transpose explicitly (a cheap copy) and then multiply on the fast path. They also skip
// the gradient of operands that need none: a frozen weight (tf.Variable with trainable = false) or a constant.
import * as tf from '@tensorflow/tfjs';

type GradResult = { value: tf.Tensor; gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor | tf.Tensor[] };

/** tf.customGrad with loose typing (its declared signature rejects ordinary typed closures). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function customGrad(f: (...args: any[]) => GradResult): (...inputs: tf.Tensor[]) => tf.Tensor {
  return tf.customGrad(f as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (...inputs: tf.Tensor[]) => tf.Tensor;
}

function needsGrad(t: tf.Tensor): boolean {
  return !(t instanceof tf.Variable) || t.trainable;
}

/** a [n, k] · b [k, m] with a fast-path gradient. The gradient of an operand marked constant, or of a frozen variable,
 *  is returned as zeros without being computed (nothing upstream uses it). */
export function mm(a: tf.Tensor2D, b: tf.Tensor2D, constant: { a?: boolean; b?: boolean } = {}): tf.Tensor2D {
  const gradA = !constant.a && needsGrad(a);
  const gradB = !constant.b && needsGrad(b);
  const f = customGrad((x: tf.Tensor, y: tf.Tensor, save: tf.GradSaveFunc) => {
    save([x, y]);
    return {
      value: tf.matMul(x as tf.Tensor2D, y as tf.Tensor2D),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sx, sy] = saved as tf.Tensor2D[];
        return [
          gradA ? tf.matMul(dy as tf.Tensor2D, tf.transpose(sy)) : tf.zerosLike(sx),
          gradB ? tf.matMul(tf.transpose(sx), dy as tf.Tensor2D) : tf.zerosLike(sy),
        ];
      },
    };
  });
  return f(a, b) as tf.Tensor2D;
}

/**
 * Rows of a constant 0/1 matrix times a parameter table: sel [n, k] (given as values) · table [k, m]. Used for
 * one-hot embeddings; the gradient selᵀ·dy is a plain product with selᵀ built directly, no transpose of a big matrix.
 */
export function selectRows(selection: Float32Array, n: number, table: tf.Tensor2D): tf.Tensor2D {
  const k = table.shape[0];
  const f = customGrad((t: tf.Tensor) => {
    const sel = tf.tensor2d(selection, [n, k]);
    return {
      value: tf.matMul(sel, t as tf.Tensor2D),
      gradFunc: (dy: tf.Tensor) => {
        if (!needsGrad(table)) return tf.zerosLike(t);
        const transposed = new Float32Array(k * n);
        for (let i = 0; i < n; i++) for (let j = 0; j < k; j++) if (selection[i * k + j] !== 0) transposed[j * n + i] = selection[i * k + j];
        return tf.matMul(tf.tensor2d(transposed, [k, n]), dy as tf.Tensor2D);
      },
    };
  });
  return f(table) as tf.Tensor2D;
}

/** x[index[i]] along axis 0, differentiable on WASM (tf.gather's gradient needs UnsortedSegmentSum, absent there). */
export function gatherRows<T extends tf.Tensor>(x: T, index: Int32Array): T {
  const u = x.shape[0];
  const n = index.length;
  const f = customGrad((t: tf.Tensor) => ({
    value: tf.gather(t, tf.tensor1d(index, 'int32')),
    gradFunc: (dy: tf.Tensor) => {
      // Sum the gradient rows that came from the same source row: selᵀ [u, n] · dy [n, rest].
      const sel = new Float32Array(u * n);
      for (let i = 0; i < n; i++) sel[index[i] * n + i] = 1;
      return tf.reshape(tf.matMul(tf.tensor2d(sel, [u, n]), tf.reshape(dy, [n, -1])), t.shape);
    },
  }));
  return f(x) as T;
}
