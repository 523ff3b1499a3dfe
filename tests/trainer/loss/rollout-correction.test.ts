// TRL's vllm importance-sampling correction (trainer/loss/rollout-correction.ts): the weights of its four modes on a
// hand-computed batch, the sampling/* metrics, and that grpoLoss weights the policy-gradient term only.
import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../models/backend.ts';
import { correctionMetrics, emptyCorrectionSums, importanceWeights } from '../../../trainer/loss/rollout-correction.ts';
import { grpoLoss } from '../../../trainer/loss/loss.ts';

beforeAll(async () => {
  await initBackend('cpu', null);
});

// Two rows, three positions; row 1 has one padding position. Log-ratios old − sampling: row 0 [0, ln 2, ln 4],
// row 1 [−ln 8, 0, (padding)].
const old = () =>
  tf.tensor2d([
    [0, Math.log(2), Math.log(4)],
    [-Math.log(8), 0, 5],
  ]);
const sampling = () => tf.zeros([2, 3]) as tf.Tensor2D;
const mask = () =>
  tf.tensor2d([
    [1, 1, 1],
    [1, 1, 0],
  ]);
const values = (t: tf.Tensor) => Array.from(t.dataSync());

describe('importance-sampling weights', () => {
  it("token_truncate clamps each token's ratio into [min, max]; token_mask zeroes it outside", () => {
    expect(
      values(importanceWeights(old(), sampling(), mask(), { mode: 'token_truncate', clipMax: 3, clipMin: 0.25 })),
    ).toEqual([1, 2, 3, 0.25, 1, 1].map((x) => expect.closeTo(x, 6)));
    expect(
      values(importanceWeights(old(), sampling(), mask(), { mode: 'token_mask', clipMax: 3, clipMin: 0.25 })),
    ).toEqual([1, 2, 0, 0, 1, 1].map((x) => expect.closeTo(x, 6)));
  });

  it('sequence modes take exp of the summed log-ratio over the real tokens (as TRL)', () => {
    // Row 0: exp(ln 8) = 8; row 1: exp(−ln 8) = 0.125 (the padding position does not count).
    expect(values(importanceWeights(old(), sampling(), mask(), { mode: 'sequence_truncate', clipMax: 3 }))).toEqual(
      [3, 0.125].map((x) => expect.closeTo(x, 6)),
    );
    expect(values(importanceWeights(old(), sampling(), mask(), { mode: 'sequence_mask', clipMax: 3 }))).toEqual(
      [0, 0.125].map((x) => expect.closeTo(x, 6)),
    );
  });

  it("logs TRL's sampling/* metrics over the real tokens", () => {
    const sums = emptyCorrectionSums();
    importanceWeights(old(), sampling(), mask(), { mode: 'token_truncate', clipMax: 3 }, sums);
    const m = correctionMetrics(sums);
    expect(m['sampling/sampling_logp_difference/mean']).toBeCloseTo((Math.log(2) + Math.log(4) + Math.log(8)) / 5, 6);
    expect(m['sampling/sampling_logp_difference/max']).toBeCloseTo(Math.log(8), 6);
    expect(m['sampling/importance_sampling_ratio/min']).toBeCloseTo(0.125, 6);
    expect(m['sampling/importance_sampling_ratio/max']).toBeCloseTo(3, 6);
    expect(m['sampling/importance_sampling_ratio/mean']).toBeCloseTo((1 + 2 + 3 + 0.125 + 1) / 5, 6);
  });

  it('weights the policy-gradient term of grpoLoss, not the KL', () => {
    const lp = tf.tensor2d([
      [-1, -1, -1],
      [-1, -1, -1],
    ]);
    const base = {
      logProbs: lp,
      oldLogProbs: lp,
      refLogProbs: tf.tensor2d([
        [-2, -2, -2],
        [-2, -2, -2],
      ]),
      mask: mask(),
      advantages: tf.tensor1d([1, -1]),
    };
    const options = {
      epsilon: 0.2,
      beta: 0,
      lossType: 'dapo' as const,
      maxCompletionTokens: 3,
      totalSequences: 2,
      totalTokens: 5,
    };
    const weights = tf.tensor2d([[2], [0.5]]);
    const plain = grpoLoss(base, options).loss.dataSync()[0];
    const weighted = grpoLoss({ ...base, importanceWeights: weights }, options).loss.dataSync()[0];
    // ratio 1: per-token loss −A; plain = (−3 + 2) / 5, weighted = (−3·2 + 2·0.5) / 5.
    expect(plain).toBeCloseTo(-1 / 5, 6);
    expect(weighted).toBeCloseTo(-5 / 5, 6);
    const klOnly = { ...options, beta: 1 };
    const a = grpoLoss({ ...base, advantages: tf.tensor1d([0, 0]) }, klOnly).loss.dataSync()[0];
    const b = grpoLoss(
      { ...base, advantages: tf.tensor1d([0, 0]), importanceWeights: weights },
      klOnly,
    ).loss.dataSync()[0];
    expect(b).toBeCloseTo(a, 6);
  });
});
