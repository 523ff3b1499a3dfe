import { describe, expect, it } from 'vitest';
import { groupAdvantages } from '../../trainer/advantages.ts';

describe('group advantages', () => {
  it('standardises each group by its own mean and sample std', () => {
    const { advantages, zeroSpreadGroups, groups } = groupAdvantages([1, 0, 0, 0, 1, 1], 3, { scaleRewards: true, epsilon: 0 });
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
    const { advantages, zeroSpreadGroups } = groupAdvantages([1, 1, 0, 0, 0.3, 0.7], 2, { scaleRewards: true, epsilon: 1e-4 });
    expect(Array.from(advantages.slice(0, 4))).toEqual([0, 0, 0, 0]);
    expect(advantages[4]).toBeLessThan(0);
    expect(zeroSpreadGroups).toBe(2);
  });

  it('rejects rewards that do not split into groups', () => {
    expect(() => groupAdvantages([1, 0, 1], 2, { scaleRewards: true, epsilon: 1e-4 })).toThrow(/groups of 2/);
  });
});
