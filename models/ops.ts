// Matrix products shaped for the tfjs WASM backend. Its fast path (XNNPACK) covers only plain products of one matrix
// by another: transposed operands and batched products fall to a loop that is an order of magnitude
// slower (docs/engines.md, the tfjs engine). tfjs's own gradient of matMul multiplies transposed operands, so importing
// this module replaces that gradient with one that transposes explicitly (a cheap copy) and then multiplies on the
// fast path. It is mathematically the same gradient and it stays lazy, so tfjs still skips the gradient of operands
// that need none (frozen weights, constants). tf.customGrad is avoided in hot paths: it copies its inputs and output.
import * as tf from '@tensorflow/tfjs';

type GradResult = { value: tf.Tensor; gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor | tf.Tensor[] };

/** tf.customGrad with loose typing (its declared signature rejects ordinary typed closures). */
// biome-ignore lint/suspicious/noExplicitAny: tf.customGrad calls f with its tensors spread, whatever their count.
export function customGrad(f: (...args: any[]) => GradResult): (...inputs: tf.Tensor[]) => tf.Tensor {
  return tf.customGrad(f as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (
    ...inputs: tf.Tensor[]
  ) => tf.Tensor;
}

const original = tf.getGradient('BatchMatMul');
/** Swap the last two axes (a plain copy on every backend). */
const transposed = (x: tf.Tensor) => (x.rank === 2 ? tf.transpose(x) : tf.transpose(x, [0, 2, 1]));
/** Matrices (rank 2) or a batch of one: the shapes the WASM fast path multiplies. */
const single = (x: tf.Tensor) => x.rank === 2 || (x.rank === 3 && x.shape[0] === 1);

tf.registerGradient({
  kernelName: 'BatchMatMul',
  inputsToSave: ['a', 'b'],
  gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[], attrs: tf.NamedAttrMap) => {
    const [a, b] = saved;
    const g = dy as tf.Tensor;
    // Batched products are slow either way; keep tfjs's own formulas there (they also handle broadcasting).
    if (!single(a) || !single(b) || !single(g) || a.rank !== b.rank) return original.gradFunc(dy, saved, attrs);
    const { transposeA, transposeB } = attrs as unknown as { transposeA: boolean; transposeB: boolean };
    const mul = (x: tf.Tensor, y: tf.Tensor) => tf.matMul(x as tf.Tensor2D, y as tf.Tensor2D);
    if (!transposeA && !transposeB) return { a: () => mul(g, transposed(b)), b: () => mul(transposed(a), g) };
    if (!transposeA && transposeB) return { a: () => mul(g, b), b: () => mul(transposed(g), a) };
    if (transposeA && !transposeB) return { a: () => mul(b, transposed(g)), b: () => mul(a, g) };
    return { a: () => mul(transposed(b), transposed(g)), b: () => mul(transposed(g), transposed(a)) };
  },
});

/** a [n, k] · b [k, m] (the gradient registered above keeps its backward pass on the fast path). */
export function mm(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return tf.matMul(a, b);
}

/** Rows of a constant 0/1 matrix times a table: sel [n, k] (given as values) · table [k, m]. One-hot embeddings. */
export function selectRows(selection: Float32Array, n: number, table: tf.Tensor2D): tf.Tensor2D {
  return tf.matMul(tf.tensor2d(selection, [n, table.shape[0]]), table);
}

/**
 * Make the WASM backend's Identity share its input's memory, as the cpu backend's does, instead of copying it. tfjs
 * clones every tensor it saves for the backward pass; on WASM each clone was a full copy, most of a learner step's
 * memory. Tensors are immutable (Variable.assign swaps the buffer), so sharing is safe.
 */
export function shareIdentityOnWasm(): void {
  if (!tf.getKernel('Identity', 'wasm')) return;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({
    kernelName: 'Identity',
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend }) => {
      const x = inputs.x as tf.TensorInfo;
      (backend as unknown as { incRef(dataId: object): void }).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });
}
