// The step objective: config keys mapped onto grpoLoss, and the property the loop relies on: however the learner
// splits a step into micro-batches (even across local batches), the summed losses and gradients are the full batch's.
import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { grpoLoss, IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES } from '../../../trainer/loss/loss.ts';
import { addLossSums, emptyLossSums, stepObjective, type ObjectiveConfig } from '../../../trainer/loss/objective.ts';
import { entropyThreshold } from '../../../trainer/loss/entropy-mask.ts';
import { stepNormalisers } from '../../../trainer/loss/loss-normalisers.ts';

// Four completions, two prompts of two (promptsPerStep 1: two local batches), the third truncated.
const logp = [
  [-0.5, -1.2, -0.1, -0.4],
  [-2.0, -0.3, -9, -9],
  [-0.2, -0.9, -1.1, -0.6],
  [-1.0, -9, -9, -9],
];
const old = [
  [-0.75, -1.0, -0.1, -0.3],
  [-1.7, -0.5, -9, -9],
  [-0.3, -0.7, -1.5, -0.6],
  [-0.8, -9, -9, -9],
];
const ref = [
  [-0.6, -1.1, -0.2, -0.4],
  [-2.1, -0.4, -9, -9],
  [-0.2, -1.0, -1.0, -0.7],
  [-1.1, -9, -9, -9],
];
const mask = [
  [1, 1, 1, 1],
  [1, 1, 0, 0],
  [1, 1, 1, 1],
  [1, 0, 0, 0],
];
const entropies = [
  [0.5, 2.0, 1.0, 0.7],
  [3.0, 0.1, 0, 0],
  [1.5, 0.2, 2.5, 0.9],
  [1.2, 0, 0, 0],
];
const adv = [1, -1, 0.5, -0.5];
const completions = mask.map((row, i) => ({ tokens: row.reduce((s, x) => s + x, 0), finished: i !== 2 }));
const rowsOf = (m: number[][], idx: number[]) => tf.tensor2d(idx.map((i) => m[i]));

function lossAndGrad(
  config: ObjectiveConfig,
  chunks: number[][],
  threshold?: number,
): { loss: number; grad: number[] } {
  const objective = stepObjective(config, completions, 4);
  const options = threshold === undefined ? objective.options : { ...objective.options, entropyThreshold: threshold };
  let loss = 0;
  const grad = new Array<number>(16).fill(0);
  for (const idx of chunks) {
    tf.tidy(() => {
      const f = (lp: tf.Tensor) =>
        grpoLoss(
          {
            logProbs: lp as tf.Tensor2D,
            oldLogProbs: rowsOf(old, idx),
            refLogProbs: rowsOf(ref, idx),
            mask: rowsOf(mask, idx),
            advantages: tf.tensor1d(idx.map((i) => adv[i])),
            entropies: rowsOf(entropies, idx),
            ...objective.rows(idx),
          },
          options,
        ).loss;
      const { value, grad: g } = tf.valueAndGrad(f)(rowsOf(logp, idx));
      loss += value.dataSync()[0];
      const gv = g.dataSync();
      idx.forEach((i, r) => {
        for (let t = 0; t < 4; t++) grad[i * 4 + t] += gv[r * 4 + t];
      });
    });
  }
  return { loss, grad };
}

const base: ObjectiveConfig = {
  lossType: 'grpo',
  importanceSamplingLevel: 'token',
  epsilon: 0.2,
  epsilonHigh: 0.28,
  beta: 0.05,
  maskTruncatedCompletions: true,
  topEntropyQuantile: 1,
  promptsPerStep: 1,
  groupSize: 2,
};

describe('step objective', () => {
  for (const lossType of LOSS_TYPES) {
    for (const level of IMPORTANCE_SAMPLING_LEVELS) {
      it(`gives the full batch's loss and gradient whatever the micro-batches (${lossType}, ${level})`, () => {
        const config = { ...base, lossType, importanceSamplingLevel: level };
        const whole = lossAndGrad(config, [[0, 1, 2, 3]]);
        expect(whole.grad.some((g) => Math.abs(g) > 1e-3)).toBe(true);
        for (const chunks of [
          [[0], [1], [2], [3]],
          [
            [0, 2],
            [3, 1],
          ],
          [[1, 2, 3], [0]],
        ]) {
          const split = lossAndGrad(config, chunks);
          expect(split.loss).toBeCloseTo(whole.loss, 6);
          split.grad.forEach((g, k) =>
            expect(g, `gradient ${k}, chunks ${JSON.stringify(chunks)}`).toBeCloseTo(whole.grad[k], 6),
          );
        }
      });
    }
  }

  it('with the top-entropy mask, a threshold over the whole step keeps that property', () => {
    const config = { ...base, lossType: 'dapo' as const, topEntropyQuantile: 0.5 };
    // The step's real tokens, less the truncated third completion.
    const values = entropies.flatMap((row, i) => row.filter((_, t) => mask[i][t] && completions[i].finished));
    const threshold = tf.tidy(() => entropyThreshold(values, null, 0.5));
    const whole = lossAndGrad(config, [[0, 1, 2, 3]], threshold);
    const split = lossAndGrad(
      config,
      [
        [0, 2],
        [3, 1],
      ],
      threshold,
    );
    expect(split.loss).toBeCloseTo(whole.loss, 6);
    split.grad.forEach((g, k) => expect(g).toBeCloseTo(whole.grad[k], 6));
    expect(stepObjective(config, completions, 4).needsEntropy).toBe(true);
  });

  it('maps the config onto the loss options and the step counts', () => {
    const objective = stepObjective(base, completions, 4);
    // active tokens: 4 + 2 + (truncated: 0) + 1 = 7; local batches {0, 1}: 6 tokens, {2, 3}: 1 token
    expect(objective.options).toMatchObject({
      lossType: 'grpo',
      epsilonHigh: 0.28,
      totalSequences: 4,
      totalTokens: 7,
      localBatches: 2,
      maxCompletionTokens: 4,
    });
    expect(objective.rows([3, 0])).toEqual({ finished: [true, true], localBatchTokens: Float32Array.from([1, 6]) });
    expect(objective.needsEntropy).toBe(false);
  });

  it('accumulates the sums trl-metrics reads', () => {
    const sums = emptyLossSums();
    tf.tidy(() => {
      const objective = stepObjective(base, completions, 4);
      const all = [0, 1, 2, 3];
      const out = grpoLoss(
        {
          logProbs: rowsOf(logp, all),
          oldLogProbs: rowsOf(old, all),
          refLogProbs: rowsOf(ref, all),
          mask: rowsOf(mask, all),
          advantages: tf.tensor1d(adv),
          ...objective.rows(all),
        },
        objective.options,
      );
      addLossSums(sums, out.sums, rowsOf(entropies, all), rowsOf(mask, all));
    });
    // tokens that carry loss: 7; entropy over the 11 real tokens: 0.5 + 2 + 1 + 0.7 + 3 + 0.1 + 1.5 + 0.2 + 2.5 + 0.9 + 1.2
    expect(sums.tokens).toBe(7);
    expect(sums.clipUnits).toBe(7);
    expect(sums.entropyTokens).toBe(11);
    expect(sums.entropy).toBeCloseTo(13.6, 5);
  });

  it('lets the last local batch be short (dynamic sampling may keep fewer groups than asked)', () => {
    const step = stepNormalisers(
      [3, 1, 2, 5, 4].map((tokens) => ({ tokens, finished: true })),
      2,
      false,
    );
    // local batches {3, 1}, {2, 5}, {4}
    expect(step).toMatchObject({ totalSequences: 5, totalTokens: 15, localBatches: 3 });
    expect(Array.from(step.localBatchTokens)).toEqual([4, 4, 7, 7, 4]);
  });
});
