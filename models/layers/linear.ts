// A linear layer with an optional LoRA delta: y = x W (+ b) + (alpha / r) ·
// (x A) B. Weights are kept as [in, out] (the transpose of torch's nn.Linear [out, in]) and A, B as [in, r] and
// [r, out], so every product is a plain 2-D matrix product (the fast path of the tfjs WASM backend; models/ops.ts).
// A is random and B zero for a fresh adapter, so it starts as the identity change; with `useLora` false the same
// weights give the reference policy.
import * as tf from '@tensorflow/tfjs';
import { mm } from '../ops.ts';

interface LoraDelta {
  a: tf.Variable; // [in, r]
  b: tf.Variable; // [r, out]
  /** alpha / r (alpha / sqrt(r) with rsLoRA). */
  scale: number;
}

export interface LinearWeights {
  /** Module path in the Hugging Face model (e.g. model.layers.0.self_attn.q_proj): PEFT keys derive from it. */
  module: string;
  w: tf.Variable; // [in, out]
  bias?: tf.Variable; // [out]
  lora?: LoraDelta;
}

/** x [N, in] → [N, out]. */
export function linear(x: tf.Tensor2D, l: LinearWeights, useLora = true): tf.Tensor2D {
  return tf.tidy(() => {
    let y = mm(x, l.w as tf.Tensor2D);
    if (l.bias) y = tf.add(y, l.bias);
    if (useLora && l.lora) {
      const low = mm(x, l.lora.a as tf.Tensor2D); // [N, r]
      y = tf.add(y, tf.mul(mm(low, l.lora.b as tf.Tensor2D), l.lora.scale));
    }
    return y;
  });
}
