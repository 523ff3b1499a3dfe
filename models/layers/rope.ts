// Rotary position embeddings in Hugging Face's rotate-half layout: a head vector
// x of size d is split in halves and rotated as x·cos + rotate_half(x)·sin, rotate_half(x) = [-x[d/2:], x[:d/2]],
// with cos/sin = [f, f] and f[p, i] = p · inv_freq[i], inv_freq[i] = 1 / theta^(2i/d) in float32 (HF checkpoints are
// permuted for this layout; the interleaved GPT-J pairing would be wrong). Linear scaling divides inv_freq by the
// factor; Gemma 3 gives sliding layers their own base, so callers build one table per (base, factor).
import * as tf from '@tensorflow/tfjs';

/** inv_freq [d/2] as transformers computes it (float32 exponent 2i/d, float32 result). */
export function inverseFrequencies(headDim: number, theta: number, linearFactor: number | null = null): Float32Array {
  const out = new Float32Array(headDim / 2);
  for (let i = 0; i < out.length; i++) {
    const exponent = Math.fround((2 * i) / headDim);
    let inv = Math.fround(1 / Math.fround(theta ** exponent));
    if (linearFactor !== null) inv = Math.fround(inv / linearFactor);
    out[i] = inv;
  }
  return out;
}

export interface RopeTable {
  cos: tf.Tensor3D; // [N, 1, d]: one row per (sequence, position) row of the packed batch, broadcast over heads
  sin: tf.Tensor3D;
}

/** cos/sin values for each position (flattened [B·T] positions), [N, d] row-major (the ONNX engine feeds these). */
export function ropeValues(
  positions: ArrayLike<number>,
  invFreq: Float32Array,
): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const d = half * 2;
  const cos = new Float32Array(positions.length * d);
  const sin = new Float32Array(positions.length * d);
  for (let n = 0; n < positions.length; n++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(positions[n] * invFreq[i]);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[n * d + i] = c;
      cos[n * d + half + i] = c;
      sin[n * d + i] = s;
      sin[n * d + half + i] = s;
    }
  }
  return { cos, sin };
}

/** cos/sin for each position (flattened [B·T] positions) → [N, 1, d]. Constants (no gradient needed). */
export function ropeTable(positions: ArrayLike<number>, invFreq: Float32Array): RopeTable {
  const d = invFreq.length * 2;
  const { cos, sin } = ropeValues(positions, invFreq);
  return { cos: tf.tensor3d(cos, [positions.length, 1, d]), sin: tf.tensor3d(sin, [positions.length, 1, d]) };
}

/** x [N, heads, d] → rotated [N, heads, d]. */
export function applyRope(x: tf.Tensor3D, table: RopeTable): tf.Tensor3D {
  return tf.tidy(() => {
    const [n, h, d] = x.shape;
    const half = d / 2;
    const x1 = tf.slice(x, [0, 0, 0], [n, h, half]);
    const x2 = tf.slice(x, [0, 0, half], [n, h, half]);
    const rotated = tf.concat([tf.neg(x2), x1], 2);
    return tf.add(tf.mul(x, table.cos), tf.mul(rotated, table.sin)) as tf.Tensor3D;
  });
}

export function disposeRope(table: RopeTable): void {
  table.cos.dispose();
  table.sin.dispose();
}
