// TRL 1.9's newer GRPO options around the loss: the config's refusals of the combinations TRL refuses or
// warns against, GDPO's multi-reward advantages, the adaptive entropy controller and the new TRL metric keys, each
// against numbers worked out by hand.
import { describe, expect, it } from 'vitest';
import { UserError } from '../../core/errors.ts';
import { resolveConfig, TrainConfigSchema } from '../../trainer/config.ts';
import { groupAdvantages, normalizeThenSum } from '../../trainer/loss/advantages.ts';
import {
  appliedEntropyCoef,
  nextEntropyControl,
  startEntropyControl,
  type EntropyControlConfig,
} from '../../trainer/loss/entropy-control.ts';
import type { StepLossSums } from '../../trainer/loss/objective.ts';
import { trlMetrics } from '../../trainer/logs/trl-metrics.ts';
import { stepObjective } from '../../trainer/loss/objective.ts';

function message(values: Record<string, unknown>): string {
  try {
    resolveConfig({}, values);
  } catch (error) {
    if (error instanceof UserError) return error.message;
    throw error;
  }
  return 'accepted';
}

describe('config: TRL 1.9 options under TRL’s names and defaults', () => {
  it('has TRL’s defaults, all off', () => {
    const c = TrainConfigSchema.parse({});
    expect(c).toMatchObject({
      sapoTemperaturePos: 1,
      sapoTemperatureNeg: 1.05,
      vespoKPos: 2,
      vespoLambdaPos: 3,
      vespoKNeg: 3,
      vespoLambdaNeg: 2,
      useBiasCorrectionKl: false,
      entropyCoef: 0,
      useAdaptiveEntropy: false,
      entropyCoefMin: 0,
      entropyCoefMax: 1,
      entropyCoefDelta: 0.005,
      entropyTarget: 0.2,
      multiObjectiveAggregation: 'sum_then_normalize',
    });
    expect(c.delta).toBeUndefined();
    expect(c.offPolicyMaskThreshold).toBeUndefined();
    expect(c.numGenerationsEval).toBeUndefined();
  });

  it('refuses what TRL refuses or warns against, in one line naming the key', () => {
    expect(message({ lossType: 'luspo' })).toMatch(
      /^config: lossType: 'luspo' scales GSPO's sequence-level term by the length: it needs importanceSamplingLevel 'sequence'/,
    );
    expect(message({ lossType: 'vespo', importanceSamplingLevel: 'sequence' })).toMatch(
      /^config: importanceSamplingLevel: 'sequence' with lossType 'vespo'/,
    );
    expect(message({ lossType: 'cispo', importanceSamplingLevel: 'sequence' })).toMatch(
      /^config: importanceSamplingLevel: 'sequence' \(GSPO\) needs lossType 'grpo', 'sapo' or 'luspo': 'cispo'/,
    );
    expect(message({ lossType: 'sapo', delta: 2 })).toMatch(
      /^config: delta: delta caps the unclipped branch of the clipped loss types .*'sapo' has none/,
    );
    expect(message({ delta: 1.1 })).toMatch(/^config: delta: delta \(1.1\) must exceed 1 \+ epsilonHigh \(1.2\)/);
    expect(message({ epsilonHigh: 0.5, delta: 1.4 })).toMatch(
      /^config: delta: delta \(1.4\) must exceed 1 \+ epsilonHigh \(1.5\)/,
    );
    expect(message({ useAdaptiveEntropy: true, entropyCoefMin: 0.5, entropyCoefMax: 0.1 })).toMatch(
      /^config: entropyCoefMin: entropyCoefMin \(0.5\) exceeds entropyCoefMax \(0.1\)/,
    );
    expect(message({ numGenerationsEval: 4 })).toMatch(
      /^config: numGenerationsEval: metrl's evaluation decodes greedily/,
    );
    expect(message({ multiObjectiveAggregation: 'sum' })).toMatch(/^config: multiObjectiveAggregation: /);
    expect(message({ offPolicyMaskThreshold: 0 })).toMatch(/^config: offPolicyMaskThreshold: /);
    expect(message({ sapoTemperatureNeg: 0 })).toMatch(/^config: sapoTemperatureNeg: /);
  });

  it('accepts the combinations TRL documents', () => {
    expect(message({ lossType: 'luspo', importanceSamplingLevel: 'sequence' })).toBe('accepted');
    expect(message({ lossType: 'sapo', importanceSamplingLevel: 'sequence' })).toBe('accepted');
    expect(message({ lossType: 'cispo', epsilonHigh: 5 })).toBe('accepted');
    expect(message({ lossType: 'vespo' })).toBe('accepted');
    expect(message({ lossType: 'dapo', delta: 4, offPolicyMaskThreshold: 0.5, useBiasCorrectionKl: true })).toBe(
      'accepted',
    );
    expect(message({ useAdaptiveEntropy: true, entropyTarget: 1.5 })).toBe('accepted');
  });

  it('leaves the default objective’s options as they were (no new key set)', () => {
    const c = TrainConfigSchema.parse({});
    const objective = stepObjective(
      c,
      [
        { tokens: 3, finished: true },
        { tokens: 2, finished: true },
      ],
      4,
    );
    expect(Object.keys(objective.options).sort()).toEqual(
      [
        'beta',
        'epsilon',
        'epsilonHigh',
        'importanceSamplingLevel',
        'localBatches',
        'lossType',
        'maskTruncatedCompletions',
        'maxCompletionTokens',
        'topEntropyQuantile',
        'totalSequences',
        'totalTokens',
      ].sort(),
    );
    expect(objective.needsEntropy).toBe(false);
    expect(stepObjective({ ...c, entropyCoef: 0.01 }, [{ tokens: 3, finished: true }], 4).needsEntropy).toBe(true);
  });
});

describe('multiObjectiveAggregation normalize_then_sum (GDPO)', () => {
  // Two groups of two, reward 1 = [1, 0 | 1, 1], reward 2 = [0, 1 | 1, 0], weights [1, 2], ε = 1e-4.
  // Per reward and group: (r − mean) / (std + ε), sample std √0.5: a = 0.5 / (0.7071068 + 1e-4) = 0.7070068;
  // reward 1 → [a, −a | 0, 0], reward 2 → [−a, a | a, −a]; s = n1 + 2·n2 = [−a, a, 2a, −2a] (mean 0,
  // sample std √(10a²/3) = 1.2908130); A = s / (1.2908130 + 1e-4).
  it('normalises each reward in its group, sums with the weights, then normalises over the step', () => {
    const { advantages, zeroSpreadGroups } = normalizeThenSum(
      [
        [1, 0, 1, 1],
        [0, 1, 1, 0],
      ],
      [1, 2],
      2,
      1e-4,
    );
    [-0.5476801, 0.5476801, 1.0953603, -1.0953603].forEach((want, i) => expect(advantages[i]).toBeCloseTo(want, 6));
    // The weighted raw sums [1, 2 | 3, 1] have a spread in both groups.
    expect(zeroSpreadGroups).toBe(0);
  });
  it('differs from sum_then_normalize, which sees the second group’s sum [3, 1] as a plain spread', () => {
    // [3, 1]: mean 2, sample std √2: (3 − 2) / (1.4142136 + 1e-4) = 0.7070568, against GDPO's 1.0953603 above.
    const summed = groupAdvantages([1, 2, 3, 1], 2, { scaleRewards: 'group', epsilon: 1e-4 }).advantages;
    expect(summed[2]).toBeCloseTo(0.7070568, 6);
  });
  it('names a weight count that does not fit', () => {
    expect(() => normalizeThenSum([[1, 0]], [1, 2], 2, 1e-4)).toThrow(/2 weights for 1 rewards/);
  });
});

describe('adaptive entropy control (Skywork-OR1)', () => {
  const config: EntropyControlConfig = {
    entropyCoef: 0.01,
    useAdaptiveEntropy: true,
    entropyCoefMin: 0,
    entropyCoefMax: 0.02,
    entropyCoefDelta: 0.005,
    entropyTarget: 0.5,
  };
  it('applies nothing before the first measurement, then c when the last entropy was at or below the target', () => {
    let control = startEntropyControl(config);
    expect(appliedEntropyCoef(config, control)).toBe(0);
    control = nextEntropyControl(config, control, 0.4); // below: c 0.01 → 0.015, applied next
    expect(control.coef).toBeCloseTo(0.015, 12);
    expect(appliedEntropyCoef(config, control)).toBeCloseTo(0.015, 12);
    control = nextEntropyControl(config, control, 0.3); // 0.02
    control = nextEntropyControl(config, control, 0.3); // capped at 0.02
    expect(control.coef).toBeCloseTo(0.02, 12);
    control = nextEntropyControl(config, control, 0.9); // above: 0.015, and none applied next
    expect(control.coef).toBeCloseTo(0.015, 12);
    expect(appliedEntropyCoef(config, control)).toBe(0);
    for (let k = 0; k < 5; k++) control = nextEntropyControl(config, control, 0.9);
    expect(control.coef).toBe(0); // floored at entropyCoefMin
  });
  it('without adaptive control applies entropyCoef every update and never moves it', () => {
    const fixed = { ...config, useAdaptiveEntropy: false };
    const control = nextEntropyControl(fixed, startEntropyControl(fixed), 0.1);
    expect(control.coef).toBe(0.01);
    expect(appliedEntropyCoef(fixed, control)).toBe(0.01);
  });
});

describe("TRL 1.9's metric keys", () => {
  const sums: StepLossSums = {
    tokens: 100,
    kl: 0,
    clipLow: 3,
    clipHigh: 1,
    clipRegion: 4,
    clipUnits: 100,
    entropy: 150,
    entropyTokens: 100,
    clipLowMin: 0,
    clipHighMax: 0.25,
    cispoClipped: 7,
    phi: 6,
    rows: 8,
  };
  const step = { rewards: [1, 0], groupSize: 2, completionLengths: [5, 5], finished: [true, true], beta: 0, sums };
  it('logs clip_ratio/low_min and /high_max for the clipped loss types, step_time and num_tokens when given', () => {
    const m = trlMetrics({ ...step, stepTime: 3.5, numTokens: 1234 });
    expect(m['clip_ratio/low_min']).toBe(0);
    expect(m['clip_ratio/high_max']).toBe(0.25);
    expect(m['step_time']).toBe(3.5);
    expect(m['num_tokens']).toBe(1234);
    expect('entropy_coef' in m).toBe(false);
  });
  it('logs cispo_clip_ratio for cispo, vespo/phi_seq_mean for vespo, and no clip_ratio/* for either (as TRL)', () => {
    const cispo = trlMetrics({ ...step, lossType: 'cispo' });
    expect(cispo['cispo_clip_ratio']).toBe(0.07);
    expect('clip_ratio/low_mean' in cispo).toBe(false);
    const vespo = trlMetrics({ ...step, lossType: 'vespo' });
    expect(vespo['vespo/phi_seq_mean']).toBe(0.75);
    expect('clip_ratio/region_mean' in vespo).toBe(false);
    expect('clip_ratio/region_mean' in trlMetrics({ ...step, lossType: 'luspo' })).toBe(true);
  });
  it('logs entropy_coef and policy_loss with an entropy bonus', () => {
    const m = trlMetrics({ ...step, entropyBonus: { coef: 0.015, policyLoss: 0.2 } });
    expect(m['entropy_coef']).toBe(0.015);
    expect(m['policy_loss']).toBe(0.2);
  });
});
