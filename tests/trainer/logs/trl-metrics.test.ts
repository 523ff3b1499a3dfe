// A step's statistics under TRL's metric keys, computed by hand for a small step.
import { describe, expect, it } from 'vitest';
import { trlMetrics } from '../../../trainer/logs/trl-metrics.ts';

describe('TRL metrics', () => {
  it("maps a step onto TRL's keys with TRL's definitions", () => {
    const m = trlMetrics({
      // two groups of two: the first has no spread
      rewards: [1, 1, 0, 0.5],
      groupSize: 2,
      rewardsByName: { domain: [1, 1, 0, 0.5], format: [1, 1, 0, 1] },
      completionLengths: [10, 20, 30, 40],
      finished: [true, true, false, true],
      beta: 0.04,
      sums: {
        tokens: 100,
        kl: 2,
        clipLow: 3,
        clipHigh: 1,
        clipRegion: 4,
        clipUnits: 100,
        entropy: 150,
        entropyTokens: 100,
        clipLowMin: 0,
        clipHighMax: 0.05,
        cispoClipped: 0,
        phi: 0,
        rows: 8,
      },
      dynamicSampling: { kept: 4, drawn: 6, dropped: 2, surplus: 0, extraDraws: 1 },
    });
    // reward: mean 2.5 / 4; reward_std: sample std of [1, 1, 0, 0.5] = √((0.1406 + 0.1406 + 0.3906 + 0.0156) / 3) = √0.2292
    expect(m['reward']).toBeCloseTo(0.625, 12);
    expect(m['reward_std']).toBeCloseTo(Math.sqrt(0.6875 / 3), 12);
    expect(m['frac_reward_zero_std']).toBe(0.5);
    expect(m['rewards/format/mean']).toBe(0.75);
    // format: [1, 1, 0, 1], mean 0.75, squared deviations 3 · 0.0625 + 0.5625 = 0.75, / 3 = 0.25
    expect(m['rewards/format/std']).toBeCloseTo(0.5, 12);
    expect(m['completions/mean_length']).toBe(25);
    expect(m['completions/min_length']).toBe(10);
    expect(m['completions/max_length']).toBe(40);
    expect(m['completions/clipped_ratio']).toBe(0.25);
    // terminated: 10, 20, 40
    expect(m['completions/mean_terminated_length']).toBeCloseTo(70 / 3, 12);
    expect(m['kl']).toBe(0.02);
    expect(m['entropy']).toBe(1.5);
    expect(m['clip_ratio/low_mean']).toBe(0.03);
    expect(m['clip_ratio/high_mean']).toBe(0.01);
    expect(m['clip_ratio/region_mean']).toBe(0.04);
    expect(m['dynamic_sampling/dropped']).toBe(2);
    expect(m['dynamic_sampling/kept']).toBe(4);
  });

  it('logs no kl without the KL term, and null where nothing was counted', () => {
    const m = trlMetrics({
      rewards: [0, 1],
      groupSize: 2,
      completionLengths: [5, 5],
      finished: [false, false],
      beta: 0,
      sums: {
        tokens: 0,
        kl: 0,
        clipLow: 0,
        clipHigh: 0,
        clipRegion: 0,
        clipUnits: 0,
        entropy: 0,
        entropyTokens: 0,
        clipLowMin: Infinity,
        clipHighMax: -Infinity,
        cispoClipped: 0,
        phi: 0,
        rows: 0,
      },
    });
    expect('kl' in m).toBe(false);
    expect(m['entropy']).toBeNull();
    expect(m['clip_ratio/region_mean']).toBeNull();
    expect(m['completions/mean_terminated_length']).toBe(0);
  });
});
