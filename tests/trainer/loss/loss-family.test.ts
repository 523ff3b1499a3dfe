// The GRPO family's options, each pinned to numbers worked out by hand from its formula on one small batch,
// for the loss and for its gradient with respect to the policy's log-probabilities; and the defaults pinned to the
// loss as it was before the family's options, bit for bit, so adding them changed no default run.
//
// The batch: two completions, T = 3, the second padded after two tokens. d = logp − logp_old.
//   row 0: d = [0.25, −0.2, 0]    ρ = [e^0.25, e^−0.2, 1] = [1.2840254, 0.8187308, 1]     A = +1
//   row 1: d = [−0.3, 0.2, pad]   ρ = [e^−0.3, e^0.2]     = [0.7408182, 1.2214028]        A = −2
// With ε = 0.2 (bounds 0.8, 1.2), ℓ = −min(ρA, clip(ρ)A):
//   row 0: t0 ρ > 1.2 with A > 0: clipped high, ℓ = −1.2 (no gradient); t1 ℓ = −0.8187308; t2 ℓ = −1
//   row 1: t0 ρ < 0.8 with A < 0: clipped low, ℓ = −(0.8·−2) = 1.6 (no gradient); t1 ℓ = −(1.2214028·−2) = 2.4428055
//          (ρ > 1.2 but A < 0: the min keeps the unclipped term)
//   Σ row 0 = −3.0187308, Σ row 1 = 4.0428055, Σ all = 1.0240748 over 5 tokens.
// ∂ℓ/∂logp = −ρA on unclipped tokens, 0 on clipped ones: row 0 [0, −0.8187308, −1], row 1 [0, 2.4428055, pad].
import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { grpoLoss, type LossInputs, type LossOptions } from '../../../trainer/loss/loss.ts';
import { entropyThreshold, quantile } from '../../../trainer/loss/entropy-mask.ts';
import { stepNormalisers } from '../../../trainer/loss/loss-normalisers.ts';

const logp = [
  [-0.5, -1.2, -0.1],
  [-2.0, -0.3, -9],
];
const old = [
  [-0.75, -1.0, -0.1],
  [-1.7, -0.5, -9],
];
const mask = [
  [1, 1, 1],
  [1, 1, 0],
];
const adv = [1, -2];
const base: LossOptions = { epsilon: 0.2, beta: 0, lossType: 'grpo', maxCompletionTokens: 4, totalSequences: 2 };

interface Result {
  loss: number;
  grad: number[][];
  sums: Record<string, number>;
}

function run(options: Partial<LossOptions>, extra: Partial<LossInputs> = {}, ref: number[][] | null = null): Result {
  return tf.tidy(() => {
    const inputsWith = (lp: tf.Tensor2D): LossInputs => ({
      logProbs: lp,
      oldLogProbs: tf.tensor2d(old),
      refLogProbs: ref ? tf.tensor2d(ref) : null,
      mask: tf.tensor2d(mask),
      advantages: tf.tensor1d(adv),
      ...extra,
    });
    const all = { ...base, ...options };
    const grad = tf.grad((lp: tf.Tensor) => grpoLoss(inputsWith(lp as tf.Tensor2D), all).loss)(tf.tensor2d(logp));
    const out = grpoLoss(inputsWith(tf.tensor2d(logp)), all);
    const sums = Object.fromEntries(Object.entries(out.sums).map(([k, v]) => [k, v.dataSync()[0]]));
    return { loss: out.loss.dataSync()[0], grad: grad.arraySync() as number[][], sums };
  });
}

function expectGrad(got: number[][], want: number[][]) {
  want.forEach((row, i) => row.forEach((w, t) => expect(got[i][t], `gradient [${i}, ${t}]`).toBeCloseTo(w, 6)));
}

describe('loss types: the normaliser of Σ m·ℓ', () => {
  it('grpo: per-completion token mean, then mean over the step’s completions', () => {
    const r = run({ lossType: 'grpo' });
    // (−3.0187308 / 3 + 4.0428055 / 2) / 2 = (−1.0062436 + 2.0214028) / 2
    expect(r.loss).toBeCloseTo(0.5075796, 6);
    // row 0 tokens / (3 · 2), row 1 tokens / (2 · 2)
    expectGrad(r.grad, [
      [0, -0.8187308 / 6, -1 / 6],
      [0, 2.4428055 / 4, 0],
    ]);
  });

  it('bnpo: token mean over each local batch, then over the local batches', () => {
    // Row 0's local batch holds 6 active tokens, row 1's 4 (their other completions are in other micro-batches); K = 2.
    const r = run({ lossType: 'bnpo', localBatches: 2 }, { localBatchTokens: [6, 4] });
    // (−3.0187308 / 6 + 4.0428055 / 4) / 2 = (−0.5031218 + 1.0107014) / 2
    expect(r.loss).toBeCloseTo(0.2537898, 6);
    expectGrad(r.grad, [
      [0, -0.8187308 / 12, -1 / 12],
      [0, 2.4428055 / 8, 0],
    ]);
  });

  it('dr_grpo: token sum over a constant, completions × max completion tokens', () => {
    const r = run({ lossType: 'dr_grpo' });
    // 1.0240748 / (2 · 4)
    expect(r.loss).toBeCloseTo(0.1280093, 6);
    expectGrad(r.grad, [
      [0, -0.8187308 / 8, -1 / 8],
      [0, 2.4428055 / 8, 0],
    ]);
  });

  it('dapo: token sum over the whole step’s active tokens', () => {
    // The step holds 10 active tokens (5 of them in another micro-batch): 1.0240748 / 10
    const r = run({ lossType: 'dapo', totalTokens: 10 });
    expect(r.loss).toBeCloseTo(0.1024075, 6);
    expectGrad(r.grad, [
      [0, -0.8187308 / 10, -1 / 10],
      [0, 2.4428055 / 10, 0],
    ]);
  });

  it('names what is missing instead of guessing a divisor', () => {
    expect(() => run({ lossType: 'dapo' })).toThrow(/dapo needs totalTokens/);
    expect(() => run({ lossType: 'bnpo' })).toThrow(/bnpo needs the local batch/);
  });
});

describe('asymmetric clip (epsilonHigh) and TRL’s clip statistics', () => {
  it('counts low, high and region clips over tokens with ε_high = ε', () => {
    const { sums } = run({});
    // low: ρ < 0.8 with A < 0 → row 1 t0; high: ρ > 1.2 with A > 0 → row 0 t0 (row 1 t1 has A < 0)
    expect(sums).toMatchObject({ clipLow: 1, clipHigh: 1, clipRegion: 2, clipUnits: 5, clipped: 2, tokens: 5 });
  });

  it('raises only the upper bound: ε_high = 0.3 unclips row 0 t0 (1.2840 < 1.3), row 1 t0 stays clipped at 0.8', () => {
    const r = run({ epsilonHigh: 0.3 });
    // row 0: −(1.2840254 + 0.8187308 + 1) = −3.1027562; (−3.1027562 / 3 + 4.0428055 / 2) / 2
    expect(r.loss).toBeCloseTo(0.4935754, 6);
    expectGrad(r.grad, [
      [-1.2840254 / 6, -0.8187308 / 6, -1 / 6],
      [0, 2.4428055 / 4, 0],
    ]);
    expect(r.sums).toMatchObject({ clipLow: 1, clipHigh: 0, clipRegion: 1 });
  });
});

describe('importance sampling level "sequence" (GSPO)', () => {
  // ρ_i = exp(mean over the completion's tokens of d): row 0 exp((0.25 − 0.2 + 0) / 3) = 1.0168063,
  // row 1 exp((−0.3 + 0.2) / 2) = 0.9512294; both inside [0.8, 1.2]. Every token of row i gets ℓ = −ρ_i·A_i:
  // row 0 −1.0168063 per token, row 1 +1.9024588 per token. ∂ρ_i/∂logp_it = ρ_i / |i|.
  it('grpo: one ratio per completion, applied to each of its tokens', () => {
    const r = run({ importanceSamplingLevel: 'sequence' });
    // (−1.0168063 + 1.9024588) / 2
    expect(r.loss).toBeCloseTo(0.4428263, 6);
    // row 0: ∂/∂logp_0t of (1/2)·(−ρ_0) = −1.0168063 / 3 / 2; row 1: (1/2)·(2ρ_1 / 2) = 0.9512294 / 2
    expectGrad(r.grad, [
      [-0.1694677, -0.1694677, -0.1694677],
      [0.4756147, 0.4756147, 0],
    ]);
    expect(r.sums).toMatchObject({ clipLow: 0, clipHigh: 0, clipRegion: 0, clipUnits: 2 });
  });

  it('dapo: the sequence ratio summed over tokens weighs each completion by its length', () => {
    const r = run({ importanceSamplingLevel: 'sequence', lossType: 'dapo', totalTokens: 10 });
    // (3 · −1.0168063 + 2 · 1.9024588) / 10
    expect(r.loss).toBeCloseTo(0.0754499, 6);
    // row 0: 3 tokens × (−ρ_0 / 3) / 10; row 1: 2 tokens × (2ρ_1 / 2) / 10
    expectGrad(r.grad, [
      [-0.1016806, -0.1016806, -0.1016806],
      [0.1902459, 0.1902459, 0],
    ]);
  });

  it('counts clips once per sequence: ε = 0.01 clips row 0 high (1.0168 > 1.01) and row 1 low (0.9512 < 0.99)', () => {
    const r = run({ importanceSamplingLevel: 'sequence', epsilon: 0.01 });
    // both clipped: ℓ = −1.01 per row-0 token, −(0.99 · −2) = 1.98 per row-1 token; (−1.01 + 1.98) / 2, no gradient
    expect(r.loss).toBeCloseTo(0.485, 6);
    expectGrad(r.grad, [
      [0, 0, 0],
      [0, 0, 0],
    ]);
    expect(r.sums).toMatchObject({ clipLow: 1, clipHigh: 1, clipRegion: 2, clipUnits: 2, clipped: 5 });
  });
});

describe('maskTruncatedCompletions', () => {
  it('gives a completion that hit the token limit no loss, no gradient and no statistics', () => {
    const r = run({ maskTruncatedCompletions: true }, { finished: [true, false] });
    // only row 0 is left; N stays 2 (TRL: mean over the batch's rows): −3.0187308 / 3 / 2
    expect(r.loss).toBeCloseTo(-0.5031218, 6);
    expectGrad(r.grad, [
      [0, -0.8187308 / 6, -1 / 6],
      [0, 0, 0],
    ]);
    expect(r.sums).toMatchObject({ tokens: 3, clipLow: 0, clipHigh: 1, clipUnits: 3 });
  });

  it('leaves the loss untouched when off, even with a truncated row', () => {
    expect(run({}, { finished: [true, false] }).loss).toBe(run({}).loss);
  });

  it('needs the finished flags when on', () => {
    expect(() => run({ maskTruncatedCompletions: true })).toThrow(/finished flag per row/);
  });

  it('and dapo’s divisor counts only the tokens left, as the loop computes it', () => {
    const step = stepNormalisers(
      [
        { tokens: 3, finished: true },
        { tokens: 2, finished: false },
      ],
      2,
      true,
    );
    expect(step).toMatchObject({ totalSequences: 2, totalTokens: 3, localBatches: 1 });
    expect(Array.from(step.localBatchTokens)).toEqual([3, 3]);
    const r = run(
      { maskTruncatedCompletions: true, lossType: 'dapo', totalTokens: step.totalTokens },
      { finished: [true, false] },
    );
    // −3.0187308 / 3
    expect(r.loss).toBeCloseTo(-1.0062436, 6);
  });
});

describe('topEntropyQuantile', () => {
  // Entropies of the real tokens: row 0 [0.5, 2.0, 1.0], row 1 [3.0, 0.1] (the pad's 9.9 is not a token).
  const entropies = [
    [0.5, 2.0, 1.0],
    [3.0, 0.1, 9.9],
  ];
  // ρ = 0.4 → the 0.6 quantile of [0.1, 0.5, 1.0, 2.0, 3.0]: position 0.6 · 4 = 2.4, 1.0 + 0.4 · (2.0 − 1.0) = 1.4.
  // Tokens at or above 1.4: row 0 t1 (2.0) and row 1 t0 (3.0).
  it('finds the threshold as torch.quantile does', () => {
    expect(quantile([3.0, 0.1, 1.0, 2.0, 0.5], 0.6)).toBeCloseTo(1.4, 12);
    expect(quantile([5], 0.3)).toBe(5);
    expect(quantile([], 0.5)).toBe(Infinity);
    const t = tf.tidy(() => entropyThreshold(tf.tensor2d(entropies), tf.tensor2d(mask), 0.4));
    expect(t).toBeCloseTo(1.4, 6);
  });

  it('keeps the policy term of the high-entropy tokens only', () => {
    const r = run({ topEntropyQuantile: 0.4 }, { entropies: tf.tensor2d(entropies) });
    // row 0 keeps t1 (−0.8187308), row 1 keeps t0 (1.6, clipped): (−0.8187308 / 3 + 1.6 / 2) / 2
    expect(r.loss).toBeCloseTo(0.2635449, 6);
    expectGrad(r.grad, [
      [0, -0.8187308 / 6, 0],
      [0, 0, 0],
    ]);
    // A threshold computed over the whole step can be passed instead; the same one gives the same loss.
    expect(
      run({ topEntropyQuantile: 0.4, entropyThreshold: 1.4 }, { entropies: tf.tensor2d(entropies) }).loss,
    ).toBeCloseTo(0.2635449, 6);
  });

  it('leaves the KL term on every token', () => {
    // ref differs from logp on row 0 t0 only (a low-entropy token): δ = ref − logp = 0.5,
    // KL = e^0.5 − 0.5 − 1 = 0.1487213, ∂KL/∂logp = 1 − e^0.5 = −0.6487213. β = 0.1, grpo weight 1 / (3 · 2):
    // loss 0.2635449 + 0.1 · 0.1487213 / 6 = 0.2660236; gradient of row 0 t0: 0.1 · −0.6487213 / 6 = −0.0108120
    const ref = logp.map((row, i) => row.map((x, t) => (i === 0 && t === 0 ? x + 0.5 : x)));
    const r = run({ topEntropyQuantile: 0.4, beta: 0.1 }, { entropies: tf.tensor2d(entropies) }, ref);
    expect(r.loss).toBeCloseTo(0.2660236, 6);
    expectGrad(r.grad, [
      [-0.010812, -0.8187308 / 6, 0],
      [0, 0, 0],
    ]);
  });

  it('with ρ = 1 is off and needs no entropies', () => {
    expect(run({ topEntropyQuantile: 1 }).loss).toBe(run({}).loss);
  });
});

// ---- the defaults, bit for bit ------------------------------------------------------------------------------------
// The loss as it was before the family's options (commit d683fc9), restated here to pin the defaults: grpo or Dr. GRPO, token-level
// ratios, one ε.
function legacyLoss(
  lp: tf.Tensor2D,
  oldLp: tf.Tensor2D,
  refLp: tf.Tensor2D,
  m: tf.Tensor2D,
  advantages: tf.Tensor1D,
  lossType: 'grpo' | 'dr-grpo',
): tf.Scalar {
  const epsilon = 0.2;
  const beta = 0.04;
  const a = advantages.expandDims(1) as tf.Tensor2D;
  const ratio = tf.exp(tf.sub(lp, oldLp));
  const unclipped = tf.mul(ratio, a);
  const clipped = tf.mul(tf.clipByValue(ratio, 1 - epsilon, 1 + epsilon), a);
  let perToken: tf.Tensor2D = tf.neg(tf.minimum(unclipped, clipped));
  const delta = tf.sub(refLp, lp);
  const kl = tf.sub(tf.sub(tf.exp(delta), delta), 1);
  perToken = tf.add(perToken, tf.mul(beta, kl));
  const masked = tf.mul(perToken, m);
  if (lossType === 'grpo') return tf.div(tf.sum(tf.div(tf.sum(masked, 1), tf.maximum(tf.sum(m, 1), 1))), 6);
  return tf.div(tf.sum(masked), 6 * 5);
}

describe('defaults', () => {
  it("give the loss and gradient from before the family's options bit for bit (grpo and dr_grpo, token level, ε_high = ε, no masks)", () => {
    // 3 completions of up to 5 tokens, log-ratios up to ±0.6 so that both clip bounds are hit.
    const values = (seed: number, scale: number) =>
      Array.from({ length: 15 }, (_, k) => scale * Math.sin(seed * 7.3 + k * 1.7) - 1);
    const lpv = tf.tensor2d(values(1, 0.8), [3, 5]);
    const oldv = tf.tensor2d(
      values(1, 0.8).map((x, k) => x - 0.6 * Math.sin(k * 2.1)),
      [3, 5],
    );
    const refv = tf.tensor2d(values(3, 0.5), [3, 5]);
    const m = tf.tensor2d([
      [1, 1, 1, 1, 1],
      [1, 1, 1, 0, 0],
      [1, 0, 0, 0, 0],
    ]);
    const a = tf.tensor1d([0.7, -1.3, 0.4]);
    for (const [now, before] of [
      ['grpo', 'grpo'],
      ['dr_grpo', 'dr-grpo'],
    ] as const) {
      const options: LossOptions = {
        epsilon: 0.2,
        beta: 0.04,
        lossType: now,
        maxCompletionTokens: 5,
        totalSequences: 6,
      };
      const f = (lp: tf.Tensor) =>
        grpoLoss({ logProbs: lp as tf.Tensor2D, oldLogProbs: oldv, refLogProbs: refv, mask: m, advantages: a }, options)
          .loss;
      const g = (lp: tf.Tensor) => legacyLoss(lp as tf.Tensor2D, oldv, refv, m, a, before);
      expect(f(lpv).dataSync()[0]).toBe(g(lpv).dataSync()[0]);
      expect(Array.from(tf.grad(f)(lpv).dataSync())).toEqual(Array.from(tf.grad(g)(lpv).dataSync()));
      // Both branches of the clip occur, so the comparison covers them.
      const clip = grpoLoss(
        { logProbs: lpv, oldLogProbs: oldv, refLogProbs: refv, mask: m, advantages: a },
        options,
      ).sums;
      expect(clip.clipLow.dataSync()[0] + clip.clipHigh.dataSync()[0]).toBeGreaterThan(0);
      expect(clip.clipped.dataSync()[0]).toBeLessThan(9);
    }
  });
});
