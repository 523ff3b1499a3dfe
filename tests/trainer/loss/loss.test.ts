// The GRPO loss against a plain-number re-statement of its formula, its statistics, the micro-batch invariance that
// gradient accumulation relies on, gradient-norm clipping, and AdamW against the textbook update.
import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { grpoLoss, clipGradientsByGlobalNorm, type LossType } from '../../../trainer/loss/loss.ts';
import { AdamW } from '../../../trainer/adamw.ts';

const logp = [
  [-0.5, -1.2, -0.1],
  [-2.0, -0.3, -9],
];
const old = [
  [-0.7, -1.0, -0.1],
  [-1.5, -0.3, -9],
];
const ref = [
  [-0.6, -1.5, -0.2],
  [-2.2, -0.1, -9],
];
const mask = [
  [1, 1, 1],
  [1, 1, 0],
];
const adv = [1.5, -0.8];

function reference(lossType: LossType, eps: number, beta: number, totalSequences: number, maxTokens: number): number {
  let total = 0;
  for (let i = 0; i < 2; i++) {
    let seq = 0;
    let n = 0;
    for (let t = 0; t < 3; t++) {
      if (!mask[i][t]) continue;
      const r = Math.exp(logp[i][t] - old[i][t]);
      const obj = Math.min(r * adv[i], Math.min(Math.max(r, 1 - eps), 1 + eps) * adv[i]);
      const d = ref[i][t] - logp[i][t];
      const kl = Math.exp(d) - d - 1;
      seq += -(obj - beta * kl);
      n++;
    }
    total += lossType === 'grpo' ? seq / n : seq;
  }
  return lossType === 'grpo' ? total / totalSequences : total / (totalSequences * maxTokens);
}

function run(lossType: LossType, totalSequences = 2) {
  return tf.tidy(() => {
    const out = grpoLoss(
      {
        logProbs: tf.tensor2d(logp),
        oldLogProbs: tf.tensor2d(old),
        refLogProbs: tf.tensor2d(ref),
        mask: tf.tensor2d(mask),
        advantages: tf.tensor1d(adv),
      },
      { epsilon: 0.2, beta: 0.04, lossType, maxCompletionTokens: 4, totalSequences },
    );
    return {
      loss: out.loss.dataSync()[0],
      tokens: out.sums.tokens.dataSync()[0],
      clipped: out.sums.clipped.dataSync()[0],
      kl: out.sums.kl.dataSync()[0],
    };
  });
}

describe('GRPO loss', () => {
  it('matches the formula with GRPO normalisation', () => {
    expect(run('grpo').loss).toBeCloseTo(reference('grpo', 0.2, 0.04, 2, 4), 6);
  });

  it('matches the formula with Dr. GRPO normalisation', () => {
    expect(run('dr_grpo').loss).toBeCloseTo(reference('dr_grpo', 0.2, 0.04, 2, 4), 6);
  });

  it('divides by the completions of the whole step, so micro-batch losses add up', () => {
    expect(run('grpo', 8).loss * 4).toBeCloseTo(run('grpo', 2).loss, 6);
  });

  it('counts clipped tokens and sums the k3 KL over real tokens only', () => {
    const s = run('grpo');
    expect(s.tokens).toBe(5);
    // ratios: e^0.2 > 1.2 with A > 0 → clipped; e^-0.2, e^0 (A>0) no; e^-0.5 < 0.8 with A < 0 → clipped; e^0 no
    expect(s.clipped).toBe(2);
    let kl = 0;
    for (let i = 0; i < 2; i++)
      for (let t = 0; t < 3; t++)
        if (mask[i][t]) {
          const d = ref[i][t] - logp[i][t];
          kl += Math.exp(d) - d - 1;
        }
    expect(s.kl).toBeCloseTo(kl, 6);
  });

  it('has zero policy gradient from a token whose ratio is clipped', () => {
    const g = tf.tidy(() => {
      const lp = tf.variable(tf.tensor2d([[0.5]]));
      const grads = tf.variableGrads(
        () =>
          grpoLoss(
            {
              logProbs: lp as unknown as tf.Tensor2D,
              oldLogProbs: tf.tensor2d([[0]]),
              refLogProbs: null,
              mask: tf.tensor2d([[1]]),
              advantages: tf.tensor1d([1]),
            },
            { epsilon: 0.2, beta: 0, lossType: 'grpo', maxCompletionTokens: 1, totalSequences: 1 },
          ).loss,
      );
      return grads.grads[lp.name].dataSync()[0];
    });
    expect(g).toBe(0);
  });
});

describe('gradient-norm clipping', () => {
  it('scales all gradients by one factor down to the max norm', () => {
    const { grads, norm } = clipGradientsByGlobalNorm({ a: tf.tensor1d([3, 0]), b: tf.tensor1d([4]) }, 1);
    expect(norm).toBeCloseTo(5, 6);
    expect(Array.from(grads.a.dataSync())).toEqual([expect.closeTo(0.6, 5), 0]);
    expect(grads.b.dataSync()[0]).toBeCloseTo(0.8, 5);
  });

  it('leaves small gradients alone', () => {
    const input = { a: tf.tensor1d([0.1]) };
    expect(clipGradientsByGlobalNorm(input, 1).grads).toBe(input);
  });
});

describe('AdamW', () => {
  it('matches the textbook update over several steps and restores its state exactly', () => {
    const w = tf.variable(tf.tensor1d([1, -2]), true, 'adamw-test-w');
    const opts = { learningRate: 0.1, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };
    const opt = new AdamW([w], opts);
    let p = [1, -2];
    let m = [0, 0];
    let v = [0, 0];
    const gradsSeq = [
      [0.5, -1],
      [0.2, 0.3],
      [-0.4, 0.1],
    ];
    for (let s = 0; s < gradsSeq.length; s++) {
      const g = gradsSeq[s];
      opt.apply({ [w.name]: tf.tensor1d(g) });
      m = m.map((x, i) => 0.9 * x + 0.1 * g[i]);
      v = v.map((x, i) => 0.999 * x + 0.001 * g[i] ** 2);
      p = p.map(
        (x, i) =>
          x * (1 - 0.1 * 0.01) -
          (0.1 * (m[i] / (1 - 0.9 ** (s + 1)))) / (Math.sqrt(v[i] / (1 - 0.999 ** (s + 1))) + 1e-8),
      );
    }
    const got = Array.from(w.dataSync());
    expect(got[0]).toBeCloseTo(p[0], 5);
    expect(got[1]).toBeCloseTo(p[1], 5);

    // A fresh optimiser given the saved state takes the same next step as the original.
    const state = opt.getState();
    const w2 = tf.variable(tf.tensor1d(got), true, 'adamw-test-w2');
    const opt2 = new AdamW([w2], opts);
    opt2.setState(state);
    opt.apply({ [w.name]: tf.tensor1d([0.3, 0.3]) });
    opt2.apply({ [w2.name]: tf.tensor1d([0.3, 0.3]) });
    expect(Array.from(w2.dataSync())).toEqual(Array.from(w.dataSync()));
  });
});
