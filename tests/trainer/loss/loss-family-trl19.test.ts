// TRL 1.9's newer GRPO options, each pinned to numbers worked out by hand from its formula (trainer/loss/loss.ts,
// trainer/loss/policy-terms.ts) on the batch of loss-family.test.ts, for the loss and for its gradient with respect to the
// policy's log-probabilities, and the gradient checked against central finite differences of the loss (for cispo and
// vespo, whose weights are detached, against finite differences of the surrogate with the weights held fixed).
//
// The batch: two completions, T = 3, the second padded after two tokens. d = logp − logp_old.
//   row 0: logp = [−0.5, −1.2, −0.1]  d = [0.25, −0.2, 0]   ρ = [1.2840254, 0.8187308, 1]   A = +1
//   row 1: logp = [−2.0, −0.3, pad]   d = [−0.3, 0.2, pad]  ρ = [0.7408182, 1.2214028]      A = −2
import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { grpoLoss, type LossInputs, type LossOptions } from '../../../trainer/loss/loss.ts';

const LOGP = [
  [-0.5, -1.2, -0.1],
  [-2.0, -0.3, -9],
];
const OLD = [
  [-0.75, -1.0, -0.1],
  [-1.7, -0.5, -9],
];
const MASK = [
  [1, 1, 1],
  [1, 1, 0],
];
const ADV = [1, -2];
const base: LossOptions = {
  epsilon: 0.2,
  beta: 0,
  lossType: 'grpo',
  maxCompletionTokens: 4,
  totalSequences: 2,
  totalTokens: 10,
};

interface Case {
  options: Partial<LossOptions>;
  old?: number[][];
  ref?: number[][];
  entropies?: number[][];
}

function inputsOf(c: Case, lp: tf.Tensor2D, entropies?: tf.Tensor2D): LossInputs {
  return {
    logProbs: lp,
    oldLogProbs: tf.tensor2d(c.old ?? OLD),
    refLogProbs: c.ref ? tf.tensor2d(c.ref) : null,
    mask: tf.tensor2d(MASK),
    advantages: tf.tensor1d(ADV),
    ...(entropies ? { entropies } : c.entropies ? { entropies: tf.tensor2d(c.entropies) } : {}),
  };
}

/** Loss, autodiff gradient and sums at LOGP. */
function run(c: Case) {
  return tf.tidy(() => {
    const options = { ...base, ...c.options };
    const grad = tf.grad((lp: tf.Tensor) => grpoLoss(inputsOf(c, lp as tf.Tensor2D), options).loss)(tf.tensor2d(LOGP));
    const out = grpoLoss(inputsOf(c, tf.tensor2d(LOGP)), options);
    const sums = Object.fromEntries(Object.entries(out.sums).map(([k, v]) => [k, v.dataSync()[0]]));
    return { loss: out.loss.dataSync()[0], grad: grad.arraySync() as number[][], sums };
  });
}

/** The loss at LOGP with one entry moved by h. */
function lossAt(c: Case, i: number, t: number, h: number): number {
  return tf.tidy(() => {
    const lp = LOGP.map((row) => [...row]);
    lp[i][t] += h;
    return grpoLoss(inputsOf(c, tf.tensor2d(lp)), { ...base, ...c.options }).loss.dataSync()[0];
  });
}

/** Central differences over the real tokens (float32: h = 1e-2, 3 decimals). */
function expectFiniteDifferences(c: Case, grad: number[][]) {
  const h = 1e-2;
  MASK.forEach((row, i) =>
    row.forEach((m, t) => {
      if (!m) return;
      const fd = (lossAt(c, i, t, h) - lossAt(c, i, t, -h)) / (2 * h);
      expect(grad[i][t], `∂L/∂logp[${i}, ${t}] against finite differences`).toBeCloseTo(fd, 3);
    }),
  );
}

function expectGrad(got: number[][], want: number[][]) {
  want.forEach((row, i) => row.forEach((w, t) => expect(got[i][t], `gradient [${i}, ${t}]`).toBeCloseTo(w, 6)));
}

describe('cispo: −sg[min(ρ, ε_max)]·A·logp, token mean over the step', () => {
  const c: Case = { options: { lossType: 'cispo', epsilonHigh: 1.25 } };
  it('matches the hand-computed loss and gradient (ε_max = 1.25 clips row 0 t0 only)', () => {
    const r = run(c);
    // w = [1.25, 0.8187308, 1 | 0.7408182, 1.2214028]; ℓ = −w·A·logp:
    //   row 0: 1.25·0.5 + 0.8187308·1.2 + 1·0.1 = 1.7074770; row 1: −0.7408182·2·2 − 1.2214028·2·0.3 = −3.6961145
    expect(r.loss).toBeCloseTo((1.707477 - 3.6961145) / 10, 6);
    // ∂/∂logp = −sg[w]·A / 10: every token keeps a gradient, the clipped one with weight ε_max.
    expectGrad(r.grad, [
      [-0.125, -0.08187308, -0.1],
      [0.14816364, 0.24428056, 0],
    ]);
    expect(r.sums.cispoClipped).toBe(1);
  });
  it('its gradient is the finite difference of the surrogate with the weights held fixed, not of the loss', () => {
    const r = run(c);
    const w = [
      [1.25, Math.exp(-0.2), 1],
      [Math.exp(-0.3), Math.exp(0.2)],
    ];
    const surrogate = (lp: number[][]) =>
      lp.reduce((s, row, i) => s + row.reduce((u, x, t) => u + (MASK[i][t] ? -w[i][t] * ADV[i] * x : 0), 0), 0) / 10;
    const h = 1e-3;
    const moved = (i: number, t: number, d: number) =>
      LOGP.map((row, k) => row.map((x, j) => (k === i && j === t ? x + d : x)));
    expect(r.grad[1][0]).toBeCloseTo((surrogate(moved(1, 0, h)) - surrogate(moved(1, 0, -h))) / (2 * h), 5);
    // The loss's own derivative differs (its weight moves with logp): the detach is what makes this cispo.
    const full = (lossAt(c, 1, 0, 1e-2) - lossAt(c, 1, 0, -1e-2)) / 2e-2;
    expect(Math.abs(full - r.grad[1][0])).toBeGreaterThan(0.1);
  });
  it("with TRL's default ε_max = ε = 0.2 every ratio near 1 is clipped to 0.2", () => {
    const r = run({ options: { lossType: 'cispo' } });
    expectGrad(r.grad, [
      [-0.02, -0.02, -0.02],
      [0.04, 0.04, 0],
    ]);
  });
});

describe('sapo: −σ(τ(ρ − 1))·(4/τ)·A, τ = 1 for A > 0 and 1.05 otherwise, grpo normaliser', () => {
  const c: Case = { options: { lossType: 'sapo', sapoTemperaturePos: 1, sapoTemperatureNeg: 1.05 } };
  it('matches the hand-computed loss and gradient', () => {
    const r = run(c);
    // ℓ row 0 = −4σ(ρ − 1) = [−2.2821313, −1.8192255, −2]; row 1 = 2·4σ(1.05(ρ − 1))/1.05 = [3.2943359, 4.2503458]
    // L = ((Σ row 0) / 3 + (Σ row 1) / 2) / 2
    expect(r.loss).toBeCloseTo(0.8692776, 5);
    // ∂ℓ/∂logp = −4σ(1 − σ)·A·ρ, divided by 3·2 (row 0) and 2·2 (row 1): no hard clip, every token has a gradient.
    expectGrad(r.grad, [
      [-0.2097457, -0.1353403, -0.1666667],
      [0.3636347, 0.602524, 0],
    ]);
    expectFiniteDifferences(c, r.grad);
  });
  it('at ρ = 1 gives the grpo gradient (the gate’s slope is 1 there)', () => {
    const onPolicy: Case = { options: { lossType: 'sapo' }, old: LOGP };
    const grpo = run({ options: { lossType: 'grpo' }, old: LOGP });
    expectGrad(run(onPolicy).grad, grpo.grad);
  });
});

describe('luspo: GSPO’s sequence term scaled by the length, (1/N) Σ_i |o_i|·ℓ_i', () => {
  const c: Case = { options: { lossType: 'luspo', importanceSamplingLevel: 'sequence' } };
  it('matches the hand-computed loss and gradient', () => {
    const r = run(c);
    // ρ_0 = e^(0.05/3) = 1.0168063, ρ_1 = e^(−0.05) = 0.9512294, both inside [0.8, 1.2]:
    // L = (3·(−ρ_0) + 2·(2ρ_1)) / 2 = 0.3772494
    expect(r.loss).toBeCloseTo(0.3772494, 6);
    // ∂/∂logp_0t = 3·(−ρ_0)·(1/3) / 2 = −ρ_0 / 2; ∂/∂logp_1t = 2·(2ρ_1)·(1/2) / 2 = ρ_1
    expectGrad(r.grad, [
      [-0.5084032, -0.5084032, -0.5084032],
      [0.9512294, 0.9512294, 0],
    ]);
    expectFiniteDifferences(c, r.grad);
  });
  it('with β > 0 adds the KL’s token sum per completion, over N', () => {
    const ref = [
      [-0.6, -1.0, -0.1],
      [-2.1, -0.3, -9],
    ];
    const r = run({ ...c, options: { ...c.options, beta: 0.1 }, ref });
    const k3 = (x: number) => Math.exp(x) - x - 1; // x = ref − logp
    const kl = k3(-0.1) + k3(0.2) + k3(0) + k3(-0.1) + k3(0);
    expect(r.loss).toBeCloseTo(0.3772494 + (0.1 * kl) / 2, 6);
  });
});

describe('vespo: −φ_i·A_i·logp_it, φ the Gamma weight of w_i = exp(Σ_t d_it), token mean over the step', () => {
  const c: Case = { options: { lossType: 'vespo', vespo: { kPos: 2, lambdaPos: 3, kNeg: 3, lambdaNeg: 2 } } };
  // w_0 = e^0.05, A ≥ 0: φ_0 = exp(3 + 2·0.05 − 3w_0) = 0.9476090; w_1 = e^−0.1, A < 0: φ_1 = exp(2 − 0.3 − 2w_1) = 0.8961255
  const phi0 = 0.947609;
  const phi1 = 0.8961255;
  it('matches the hand-computed loss, gradient and φ mean', () => {
    const r = run(c);
    // ℓ row 0 = φ_0·[0.5, 1.2, 0.1], row 1 = −φ_1·[4, 0.6]; L = (1.8φ_0 − 4.6φ_1) / 10
    expect(r.loss).toBeCloseTo((1.8 * phi0 - 4.6 * phi1) / 10, 6);
    expectGrad(r.grad, [
      [-phi0 / 10, -phi0 / 10, -phi0 / 10],
      [(2 * phi1) / 10, (2 * phi1) / 10, 0],
    ]);
    expect(r.sums.phi / r.sums.rows).toBeCloseTo((phi0 + phi1) / 2, 6);
  });
  it('φ is detached: the gradient is the surrogate’s with φ fixed (exact for a linear surrogate)', () => {
    const r = run(c);
    // −φ·A·logp is linear in logp once φ is fixed, so its finite difference is −φ·A / 10 exactly; the loss's own
    // derivative (φ moving with logp) is not.
    const full = (lossAt(c, 0, 0, 1e-2) - lossAt(c, 0, 0, -1e-2)) / 2e-2;
    expect(Math.abs(full - r.grad[0][0])).toBeGreaterThan(0.01);
  });
  it('φ(1) = 1: on-policy it is the plain policy gradient −A·logp', () => {
    const r = run({ ...c, old: LOGP });
    expectGrad(r.grad, [
      [-0.1, -0.1, -0.1],
      [0.2, 0.2, 0],
    ]);
  });
});

describe('delta: two-sided clip, the unclipped ratio capped at δ', () => {
  // Row 1 t1 moved off-policy: d = 0.6, ρ = 1.8221188 with A = −2.
  const old = [
    [-0.75, -1.0, -0.1],
    [-1.7, -0.9, -9],
  ];
  it('caps the loss of a negative-advantage token whose ratio ran past δ, and its gradient', () => {
    const without = run({ options: {}, old });
    const withDelta = run({ options: { delta: 1.5 }, old });
    // Without δ: ℓ = −min(1.8221188·−2, 1.2·−2) = 3.6442376, ∂ℓ/∂logp = −ρA = 3.6442376 (over 2·2).
    expect(without.grad[1][1]).toBeCloseTo(3.6442376 / 4, 5);
    // With δ = 1.5: ℓ = −min(1.5·−2, −2.4) = 3, constant: no gradient.
    expect(withDelta.grad[1][1]).toBe(0);
    expect(withDelta.loss - without.loss).toBeCloseTo((3 - 3.6442376) / 4, 6);
    // Every other token is untouched.
    expectGrad(withDelta.grad, [without.grad[0], [without.grad[1][0], 0, 0]]);
    expectFiniteDifferences({ options: { delta: 1.5 }, old }, withDelta.grad);
  });
  it('is off when unset: the default loss is the plain clipped one', () => {
    expect(run({ options: { delta: 100 } }).loss).toBeCloseTo(run({ options: {} }).loss, 7);
  });
});

describe('off-policy mask (DeepSeek-V3.2)', () => {
  // Row 1 (A < 0): mean of logp_old − logp = (0.3 − 0.2) / 2 = 0.05. Row 0 has A > 0 and is always kept.
  const ref = [
    [-0.6, -1.0, -0.1],
    [-2.1, -0.3, -9],
  ];
  it('drops the policy term of a negative-advantage completion whose mean KL exceeds the threshold, keeps its KL', () => {
    const kept = run({ options: { offPolicyMaskThreshold: 0.06, beta: 0.1 }, ref });
    const masked = run({ options: { offPolicyMaskThreshold: 0.04, beta: 0.1 }, ref });
    const none = run({ options: { beta: 0.1 }, ref });
    expect(kept.loss).toBeCloseTo(none.loss, 7);
    // Row 1's policy term was (1.6 + 2.4428055) / 2 / 2 = 1.0107014 of the loss.
    expect(none.loss - masked.loss).toBeCloseTo(1.0107014, 6);
    expectGrad([masked.grad[0]], [none.grad[0]]);
    // What is left on row 1 is the KL's gradient: β(1 − e^(ref − logp)) / (2·2).
    expect(masked.grad[1][0]).toBeCloseTo((0.1 * (1 - Math.exp(-0.1))) / 4, 6);
    expectFiniteDifferences({ options: { offPolicyMaskThreshold: 0.04, beta: 0.1 }, ref }, masked.grad);
  });
});

describe('useBiasCorrectionKl: KL_it·ρ_it, differentiated through ρ', () => {
  const ref = [
    [-0.6, -1.0, -0.1],
    [-2.1, -0.3, -9],
  ];
  it('weights each token’s KL by its ratio, and the gradient matches finite differences', () => {
    const c: Case = { options: { beta: 0.1, useBiasCorrectionKl: true }, ref };
    const r = run(c);
    const plain = run({ options: { beta: 0.1 }, ref });
    const k3 = (x: number) => Math.exp(x) - x - 1;
    // Per token: ρ·k3(ref − logp); the grpo normaliser: row 0 over 3·2, row 1 over 2·2.
    const row0 = Math.exp(0.25) * k3(-0.1) + Math.exp(-0.2) * k3(0.2) + 1 * k3(0);
    const row1 = Math.exp(-0.3) * k3(-0.1) + Math.exp(0.2) * k3(0);
    const plain0 = k3(-0.1) + k3(0.2);
    const plain1 = k3(-0.1);
    expect(r.loss - plain.loss).toBeCloseTo(0.1 * ((row0 - plain0) / 6 + (row1 - plain1) / 4), 6);
    expectFiniteDifferences(c, r.grad);
  });
});

describe('entropy bonus: L − c·Σ m·H / T_step', () => {
  const H = [
    [1.0, 0.5, 2.0],
    [0.25, 0.75, 9],
  ];
  it('subtracts c times the step’s mean entropy share, with the gradient −c·m / T_step on the entropies', () => {
    const c = 0.3;
    const withBonus = run({ options: { entropyCoef: c }, entropies: H });
    const without = run({ options: {} });
    // Σ m·H = 1 + 0.5 + 2 + 0.25 + 0.75 = 4.5 (the padded 9 left out), T_step = 10.
    expect(withBonus.sums.entropyBonus).toBeCloseTo(0.45, 7);
    expect(without.loss - withBonus.loss).toBeCloseTo(c * 0.45, 6);
    // The policy part of the gradient is unchanged.
    expectGrad(withBonus.grad, without.grad);
    const dH = tf.tidy(
      () =>
        tf
          .grad(
            (h: tf.Tensor) =>
              grpoLoss(inputsOf({ options: {} }, tf.tensor2d(LOGP), h as tf.Tensor2D), { ...base, entropyCoef: c })
                .loss,
          )(tf.tensor2d(H))
          .arraySync() as number[][],
    );
    expectGrad(dH, [
      [-0.03, -0.03, -0.03],
      [-0.03, -0.03, 0],
    ]);
  });
  it('with topEntropyQuantile < 1 carries only the high-entropy tokens, over the same T_step', () => {
    const c = 0.3;
    const h = { topEntropyQuantile: 0.5, entropyThreshold: 1 };
    const withBonus = run({ options: { ...h, entropyCoef: c }, entropies: H });
    const without = run({ options: h, entropies: H });
    // H ≥ 1 within the mask: 1 and 2 (row 0, tokens 0 and 2): Σ m·h·H = 3, T_step = 10.
    expect(withBonus.sums.entropyBonus).toBeCloseTo(0.3, 7);
    expect(without.loss - withBonus.loss).toBeCloseTo(c * 0.3, 6);
    expectGrad(withBonus.grad, without.grad);
    const dH = tf.tidy(
      () =>
        tf
          .grad(
            (e: tf.Tensor) =>
              grpoLoss(inputsOf({ options: h }, tf.tensor2d(LOGP), e as tf.Tensor2D), { ...base, ...h, entropyCoef: c })
                .loss,
          )(tf.tensor2d(H))
          .arraySync() as number[][],
    );
    expectGrad(dH, [
      [-0.03, 0, -0.03],
      [0, 0, 0],
    ]);
  });

  it('computes the share but applies nothing with c = 0 (adaptive control measuring the entropy)', () => {
    const r = run({ options: { entropyCoef: 0 }, entropies: H });
    expect(r.sums.entropyBonus).toBeCloseTo(0.45, 7);
    expect(r.loss).toBeCloseTo(run({ options: {} }).loss, 7);
  });
});

describe("TRL 1.9's per-completion clip statistics", () => {
  it('clip_ratio/low_min and /high_max: the least low-clipped and the most high-clipped completion', () => {
    const r = run({ options: {} });
    // Row 0: 0 of 3 low, 1 of 3 high (t0); row 1: 1 of 2 low (t0), 0 high.
    expect(r.sums.clipLowMin).toBe(0);
    expect(r.sums.clipHighMax).toBeCloseTo(1 / 3, 6);
  });
});
