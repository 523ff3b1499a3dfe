// The gated MLP's weights and activations: down(act(gate(x)) · up(x)), with
// SiLU (SwiGLU: Llama, Qwen2, Idefics3's text model) or the tanh approximation of GELU (GeGLU: Gemma 3). The MLP
// itself is written once in models/hf/decoder-ops.ts (gatedMlp), which both engines execute.
import * as tf from '@tensorflow/tfjs';
import type { LinearWeights } from './linear.ts';

export type MlpActivation = 'silu' | 'gelu_tanh';

export interface MlpWeights {
  gate: LinearWeights; // [hidden → intermediate]
  up: LinearWeights; // [hidden → intermediate]
  down: LinearWeights; // [intermediate → hidden]
}

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

/** GELU, tanh approximation (torch's approximate='tanh', transformers' gelu_pytorch_tanh). */
function geluTanh(x: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const inner = tf.mul(tf.add(x, tf.mul(tf.pow(x, 3), 0.044715)), SQRT_2_OVER_PI);
    return tf.mul(tf.mul(x, 0.5), tf.add(tf.tanh(inner), 1));
  });
}

export function activate(x: tf.Tensor, act: MlpActivation): tf.Tensor {
  return act === 'silu' ? tf.mul(x, tf.sigmoid(x)) : geluTanh(x);
}
