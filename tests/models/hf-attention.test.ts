// The two computations of models/layers/attention.ts (one batched product for short query blocks, per-block 2-D
// products with a hand-written masked-softmax gradient for long ones) agree in value and in gradient, with GQA,
// left padding, a sliding window, a KV cache and a bidirectional image block. (The fixture tests in hf-*.test.ts pin
// both against PyTorch: prompts of 12 positions run per block, decoding steps batched.)
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { attention, buildMask } from '../../models/layers/attention.ts';

beforeAll(async () => {
  await initBackend('wasm', null);
});

const maxAbs = (a: tf.Tensor, b: tf.Tensor) => tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);

describe('attention', () => {
  it('gives the same outputs and gradients batched and per block', () => {
    const B = 2,
      T = 9,
      H = 4,
      KV = 2,
      D = 8,
      past = 3;
    const q = tf.randomNormal([B * T, H, D], 0, 1, 'float32', 1) as tf.Tensor3D;
    const k = tf.randomNormal([B * T, KV, D], 0, 1, 'float32', 2) as tf.Tensor3D;
    const v = tf.randomNormal([B * T, KV, D], 0, 1, 'float32', 3) as tf.Tensor3D;
    const cache = {
      k: tf.randomNormal([B, KV, past, D], 0, 1, 'float32', 4) as tf.Tensor4D,
      v: tf.randomNormal([B, KV, past, D], 0, 1, 'float32', 5) as tf.Tensor4D,
    };
    const attentionMask = [new Array(past + T).fill(1), [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]];
    const tokenTypeIds = [
      [0, 0, 1, 1, 1, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 1, 1, 0, 0],
    ];
    const mask = buildMask({ batch: B, queries: T, past, attentionMask, window: 4, tokenTypeIds });
    const upstream = tf.randomNormal([B * T, H * D], 0, 1, 'float32', 6);
    const run = (perBlock: boolean) =>
      tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => {
        const { out } = attention(
          a as tf.Tensor3D,
          b as tf.Tensor3D,
          c as tf.Tensor3D,
          mask,
          { batch: B, queries: T, heads: H, kvHeads: KV, headDim: D, scale: 0.3, softcap: null, perBlock },
          cache,
        );
        return tf.sum(tf.mul(out, upstream));
      })([q, k, v]);
    const value = (perBlock: boolean) =>
      attention(
        q,
        k,
        v,
        mask,
        { batch: B, queries: T, heads: H, kvHeads: KV, headDim: D, scale: 0.3, softcap: null, perBlock },
        cache,
      ).out;
    expect(maxAbs(value(true), value(false))).toBeLessThan(1e-5);
    const g1 = run(true);
    const g0 = run(false);
    g1.forEach((g, i) => {
      expect(maxAbs(g, g0[i])).toBeLessThan(1e-5);
      expect(tf.tidy(() => tf.max(tf.abs(g)).dataSync()[0])).toBeGreaterThan(0);
    });
  });

  it('masks: causal, window i - j < w, keys of padding, image blocks both ways', () => {
    const m = buildMask({
      batch: 1,
      queries: 5,
      past: 0,
      attentionMask: [[0, 1, 1, 1, 1]],
      window: 2,
      tokenTypeIds: [[0, 0, 1, 1, 1]],
    });
    const allowed = Array.from(m.dataSync(), (x) => (x === 0 ? 1 : 0));
    m.dispose();
    expect(allowed).toEqual([
      0,
      0,
      0,
      0,
      0, // query 0 (a pad): its only causal key is a pad
      0,
      1,
      0,
      0,
      0,
      0,
      1,
      1,
      1,
      1, // query 2 opens the image block 2..4 (bidirectional, past the window)
      0,
      0,
      1,
      1,
      1,
      0,
      0,
      1,
      1,
      1,
    ]);
  });
});
