// RoPE tables and the attention mask constant as plain arrays: shared by the tfjs
// forward (transformer.ts, which wraps them in tensors) and the ONNX Runtime engine, whose worker threads load this
// without tfjs (models/onnx/builtin/worker-pool.ts).
import { headDim, type Architecture } from './config.ts';

export const NEG = -1e9;
const invFreqCache = new Map<string, Float32Array>();

function inverseFrequencies(arch: Architecture): Float32Array {
  const key = `${headDim(arch)}:${arch.ropeBase}`;
  let f = invFreqCache.get(key);
  if (!f) {
    const half = headDim(arch) / 2;
    f = new Float32Array(half);
    for (let i = 0; i < half; i++) f[i] = arch.ropeBase ** (-(2 * i) / headDim(arch));
    invFreqCache.set(key, f);
  }
  return f;
}

/** cos and sin values [rows, d] for the packed positions (heads side by side, each rotating its two halves). */
export function ropeValues(arch: Architecture, positions: Int32Array): { cos: Float32Array; sin: Float32Array } {
  const d = arch.dModel;
  const dh = headDim(arch);
  const half = dh / 2;
  const inv = inverseFrequencies(arch);
  const n = positions.length;
  const cos = new Float32Array(n * d);
  const sin = new Float32Array(n * d);
  const c = new Float32Array(half);
  const s = new Float32Array(half);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < half; j++) {
      c[j] = Math.cos(positions[i] * inv[j]);
      s[j] = Math.sin(positions[i] * inv[j]);
    }
    for (let h = 0; h < arch.nHeads; h++) {
      const o = i * d + h * dh;
      cos.set(c, o);
      cos.set(c, o + half);
      sin.set(s, o);
      sin.set(s, o + half);
    }
  }
  return { cos, sin };
}

/** R with x R = per-head rotate_half(x) = concat(-x2, x1), [d, d] row-major: one product instead of slices and concats. */
export function rotationValues(arch: Architecture): Float32Array {
  const d = arch.dModel;
  const dh = headDim(arch);
  const half = dh / 2;
  const m = new Float32Array(d * d);
  for (let h = 0; h < arch.nHeads; h++) {
    const o = h * dh;
    for (let j = 0; j < half; j++) {
      m[(o + j + half) * d + o + j] = -1;
      m[(o + j) * d + o + j + half] = 1;
    }
  }
  return m;
}
