// RMSNorm over the last axis, the normalisation of every supported decoder:
// x · rsqrt(mean(x²) + eps), then times w (Llama, Qwen2, Idefics3's text model) or times (1 + w) (Gemma, whose norm
// weights are stored around 0). Everything stays in float32, so the order of the cast and the multiply that
// transformers distinguishes does not arise. Differentiable (plain tfjs ops).
import * as tf from '@tensorflow/tfjs';

export type NormStyle = 'w' | 'one_plus_w';

/** x [..., n], weight [n] → [..., n]. */
export function rmsNorm<T extends tf.Tensor>(x: T, weight: tf.Tensor1D, eps: number, style: NormStyle): T {
  return tf.tidy(() => {
    const inv = tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps));
    const scale = style === 'one_plus_w' ? tf.add(weight, 1) : weight;
    return tf.mul(tf.mul(x, inv), scale) as T;
  });
}
