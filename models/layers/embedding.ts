// Token embedding lookup and the output head that may share its matrix.
// The table is kept either as rows [V, H] (untied models: looked up by gather) or as columns [H, V] (tied models: the
// output head multiplies by it directly, a plain product on the WASM fast path, and lookups gather columns), so a
// tied model holds its largest matrix once. tfjs's gather gradient needs UnsortedSegmentSum, which the WASM backend
// lacks; when the table is being trained the lookup's gradient is a one-hot product instead.
import * as tf from '@tensorflow/tfjs';
import { customGrad } from '../ops.ts';

export interface EmbeddingTable {
  table: tf.Variable;
  layout: 'rows' | 'columns';
}

/** ids [N] → [N, H]. */
export function embeddingLookup(e: EmbeddingTable, ids: Int32Array): tf.Tensor2D {
  return tf.tidy(() => {
    const idx = tf.tensor1d(ids, 'int32');
    const look = (t: tf.Tensor) =>
      (e.layout === 'rows' ? tf.gather(t, idx) : tf.transpose(tf.gather(t, idx, 1))) as tf.Tensor2D;
    if (!e.table.trainable) return look(e.table);
    const vocab = (e.layout === 'rows' ? e.table.shape[0] : e.table.shape[1]) as number;
    const f = customGrad((t: tf.Tensor) => ({
      value: look(t),
      gradFunc: (dy: tf.Tensor) => {
        // The ids tensor above belongs to the forward pass's scope and is gone by now: rebuild it from the array.
        const oneHot = tf.cast(tf.oneHot(tf.tensor1d(ids, 'int32'), vocab), 'float32'); // [N, V]
        return e.layout === 'rows' ? tf.matMul(oneHot, dy, true, false) : tf.matMul(dy, oneHot, true, false);
      },
    }));
    return f(e.table) as tf.Tensor2D;
  });
}
