// The gradient comparisons' measure (tests/models/onnx-learner and onnx-parallel): for two sets of named tensors with
// the same names, max |a − b| / max |b| per tensor, the largest over the tensors. A reference tensor of zeros fails
// the test (the comparison would be of nothing).
import type * as tf from '@tensorflow/tfjs';
import { expect } from 'vitest';

export function relativeError(got: tf.NamedTensorMap, want: tf.NamedTensorMap): number {
  expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
  let worst = 0;
  for (const name of Object.keys(want)) {
    const a = got[name].dataSync();
    const b = want[name].dataSync();
    let diff = 0;
    let scale = 0;
    for (let i = 0; i < b.length; i++) {
      diff = Math.max(diff, Math.abs(a[i] - b[i]));
      scale = Math.max(scale, Math.abs(b[i]));
    }
    expect(scale).toBeGreaterThan(0);
    worst = Math.max(worst, diff / scale);
  }
  return worst;
}
