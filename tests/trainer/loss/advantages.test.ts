// Group-relative advantages under TRL's three scale_rewards modes, and the boolean form older configs used.
import { describe, expect, it } from 'vitest';
import { groupAdvantages, scaleRewardsMode } from '../../../trainer/loss/advantages.ts';

describe('group advantages', () => {
  it('standardises each group by its own mean and sample std', () => {
    const { advantages, zeroSpreadGroups, groups } = groupAdvantages([1, 0, 0, 0, 1, 1], 3, {
      scaleRewards: true,
      epsilon: 0,
    });
    // group 1: mean 1/3, sample std sqrt(((2/3)^2 + 2(1/3)^2)/2) = sqrt(1/3)
    const s = Math.sqrt(1 / 3);
    expect(Array.from(advantages.slice(0, 3))).toEqual([2 / 3 / s, -1 / 3 / s, -1 / 3 / s].map((x) => Math.fround(x)));
    // group 2: mean 2/3, same std, mirrored
    expect(advantages[3]).toBeCloseTo(-2 / 3 / s, 6);
    expect(advantages[4]).toBeCloseTo(1 / 3 / s, 6);
    expect(zeroSpreadGroups).toBe(0);
    expect(groups).toBe(2);
  });

  it('centres without scaling when scaleRewards is off (Dr. GRPO)', () => {
    const { advantages } = groupAdvantages([0.5, 0.25, 0.75, 0.5], 4, { scaleRewards: false, epsilon: 1e-4 });
    expect(Array.from(advantages)).toEqual([0, -0.25, 0.25, 0]);
  });

  it('gives zero advantages to groups with no spread and counts them', () => {
    const { advantages, zeroSpreadGroups } = groupAdvantages([1, 1, 0, 0, 0.3, 0.7], 2, {
      scaleRewards: true,
      epsilon: 1e-4,
    });
    expect(Array.from(advantages.slice(0, 4))).toEqual([0, 0, 0, 0]);
    expect(advantages[4]).toBeLessThan(0);
    expect(zeroSpreadGroups).toBe(2);
  });

  it('rejects rewards that do not split into groups', () => {
    expect(() => groupAdvantages([1, 0, 1], 2, { scaleRewards: true, epsilon: 1e-4 })).toThrow(/groups of 2/);
  });

  it("'batch' divides by the std of all the step's rewards and still centres on each group's mean", () => {
    const { advantages } = groupAdvantages([1, 0, 0, 0, 1, 1], 3, { scaleRewards: 'batch', epsilon: 0 });
    // all six: mean 0.5, every deviation ±0.5, sample variance 6 · 0.25 / 5 = 0.3, std √0.3 = 0.5477226
    // group 1 (mean 1/3): [2/3, −1/3, −1/3] / 0.5477226; group 2 (mean 2/3): [−2/3, 1/3, 1/3] / 0.5477226
    const want = [1.2171612, -0.6085806, -0.6085806, -1.2171612, 0.6085806, 0.6085806];
    want.forEach((w, i) => expect(advantages[i]).toBeCloseTo(w, 6));
  });

  it("'batch' gives a zero-spread group zero advantages, and the other groups the batch std", () => {
    const { advantages, zeroSpreadGroups } = groupAdvantages([1, 1, 0, 1], 2, { scaleRewards: 'batch', epsilon: 1e-4 });
    // mean 0.75, deviations [0.25, 0.25, −0.75, 0.25], sample variance 0.75 / 3 = 0.25, std 0.5
    expect(Array.from(advantages.slice(0, 2))).toEqual([0, 0]);
    expect(advantages[2]).toBeCloseTo(-0.5 / 0.5001, 6);
    expect(advantages[3]).toBeCloseTo(0.5 / 0.5001, 6);
    expect(zeroSpreadGroups).toBe(1);
  });

  it("'mean' divides by the group's mean reward (MaxRL), ε = 1e-4, and refuses a negative mean", () => {
    // Group 1: mean 0.5, A = ±0.5 / 0.5001. Group 2: mean 0.25, A = 0.75 / 0.2501 and −0.25 / 0.2501. Group 3: all 0.
    const { advantages, zeroSpreadGroups } = groupAdvantages([1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0], 4, {
      scaleRewards: 'mean',
      epsilon: 1e-4,
    });
    const want = [0.9998, -0.9998, -0.9998, 0.9998, 2.9988005, -0.9996002, -0.9996002, -0.9996002, 0, 0, 0, 0];
    Array.from(advantages).forEach((a, i) => expect(a).toBeCloseTo(want[i], 5));
    expect(zeroSpreadGroups).toBe(1);
    expect(() => groupAdvantages([-1, 0, 0, 0], 4, { scaleRewards: 'mean', epsilon: 1e-4 })).toThrow(
      /scaleRewards 'mean' divides each group's advantages by its mean reward, and group 1 of the step has mean -0\.25: it needs rewards ≥ 0/,
    );
  });

  it("reads the old booleans as 'group' (true) and 'none' (false), bit for bit", () => {
    const rewards = [0.2, 0.9, 0.4, 1, 0, 0.5];
    expect(scaleRewardsMode(true)).toBe('group');
    expect(scaleRewardsMode(false)).toBe('none');
    expect(groupAdvantages(rewards, 3, { scaleRewards: true, epsilon: 1e-4 }).advantages).toEqual(
      groupAdvantages(rewards, 3, { scaleRewards: 'group', epsilon: 1e-4 }).advantages,
    );
    expect(groupAdvantages(rewards, 3, { scaleRewards: false, epsilon: 1e-4 }).advantages).toEqual(
      groupAdvantages(rewards, 3, { scaleRewards: 'none', epsilon: 1e-4 }).advantages,
    );
  });
});
