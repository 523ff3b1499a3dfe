// Confidence intervals against values worked out by hand (z = 1.96; the code uses the exact quantile 1.959964, so
// agreement is to about three decimals).
import { describe, expect, it } from 'vitest';
import {
  clusterMeans,
  clusteredMeanInterval,
  clusteredRatioInterval,
  mean,
  meanInterval,
  wilsonBounds,
  wilsonInterval,
} from '../../core/stats.ts';

describe('wilsonInterval', () => {
  it('7 of 10: centre 0.6445, half-width 0.2477', () => {
    const ci = wilsonInterval(7, 10)!;
    expect(ci.low).toBeCloseTo(0.3968, 3);
    expect(ci.high).toBeCloseTo(0.8922, 3);
  });
  it('0 of 10 starts at 0 and reaches 0.2775; 10 of 10 mirrors it', () => {
    const none = wilsonInterval(0, 10)!;
    expect(none.low).toBe(0);
    expect(none.high).toBeCloseTo(0.2775, 3);
    const all = wilsonInterval(10, 10)!;
    expect(all.high).toBe(1);
    expect(all.low).toBeCloseTo(0.7225, 3);
  });
  it('50 of 100: 0.5 ± 0.0962', () => {
    const ci = wilsonInterval(50, 100)!;
    expect(ci.low).toBeCloseTo(0.4038, 3);
    expect(ci.high).toBeCloseTo(0.5962, 3);
  });
  it('no interval with fewer than two examples', () => {
    expect(wilsonInterval(1, 1)).toBeNull();
    expect(wilsonInterval(0, 0)).toBeNull();
  });
  it('rejects impossible counts', () => {
    expect(() => wilsonInterval(11, 10)).toThrow(RangeError);
  });
});

describe('meanInterval', () => {
  it('[1, 2, 3, 4]: 2.5 ± 1.96·(√(5/3)/2)', () => {
    const ci = meanInterval([1, 2, 3, 4])!;
    expect(ci.low).toBeCloseTo(1.2348, 3);
    expect(ci.high).toBeCloseTo(3.7652, 3);
  });
  it('constant values give a zero-width interval', () => {
    expect(meanInterval([0.75, 0.75, 0.75])).toEqual({ low: 0.75, high: 0.75 });
  });
  it('no interval with fewer than two examples', () => {
    expect(meanInterval([0.5])).toBeNull();
    expect(meanInterval([])).toBeNull();
    expect(mean([])).toBeNull();
  });
});

describe('clusteredMeanInterval', () => {
  it('averages each board first, then takes the interval across boards', () => {
    // boards a (1, 1), b (0), c (0.5) → means 1, 0, 0.5 → 0.5 ± 1.96·0.5/√3
    expect(clusterMeans([1, 1, 0, 0.5], ['a', 'a', 'b', 'c'])).toEqual([1, 0, 0.5]);
    const ci = clusteredMeanInterval([1, 1, 0, 0.5], ['a', 'a', 'b', 'c'])!;
    expect(ci.low).toBeCloseTo(-0.0658, 3);
    expect(ci.high).toBeCloseTo(1.0658, 3);
  });
  it('equals the plain mean interval with one value per board', () => {
    expect(clusteredMeanInterval([0.2, 0.9, 0.4], ['a', 'b', 'c'])).toEqual(meanInterval([0.2, 0.9, 0.4]));
  });
  it('one board repeated gives no interval', () => {
    expect(clusteredMeanInterval([1, 0], ['a', 'a'])).toBeNull();
  });
});

// The harness's two intervals, against values the harness printed (statsmodels 0.14's proportion_confint on SciPy's
// quantile; metbench/confidence.py), to the last bit.
describe('wilsonBounds (statsmodels)', () => {
  it('from one trial on, unclipped', () => {
    expect(wilsonBounds(1, 1)).toEqual({ low: 0.2065493143772374, high: 1 });
    expect(wilsonBounds(0, 1)).toEqual({ low: 0, high: 0.7934506856227627 });
    expect(wilsonBounds(3, 7)).toEqual({ low: 0.15821985525146964, high: 0.7495416354723428 });
    expect(wilsonBounds(0, 0)).toBeNull();
  });
});

describe('clusteredRatioInterval', () => {
  it('equal totals: the mean example score ± 1.96 standard errors', () => {
    const ci = clusteredRatioInterval([
      [64, 64],
      [32, 64],
      [48, 64],
    ])!;
    const m = meanInterval([1, 0.5, 0.75])!;
    expect(ci.low).toBeCloseTo(m.low, 12);
    expect(ci.high).toBeCloseTo(Math.min(1, m.high), 12);
  });
  it('unequal totals pool the counts; empty examples drop out; fewer than two give none', () => {
    const ci = clusteredRatioInterval([
      [1, 2],
      [3, 4],
      [0, 0],
    ])!;
    // accuracy 4/6; residuals 1 - 4/3 and 3 - 8/3; n·Σr²/(n-1) = 2·(2/9)/1; stderr = √(4/9)/6 = 1/9
    expect((ci.low + ci.high) / 2).toBeCloseTo(4 / 6, 12);
    expect(ci.high - ci.low).toBeCloseTo(2 * 1.959963984540054 * (1 / 9), 12);
    expect(
      clusteredRatioInterval([
        [1, 2],
        [0, 0],
      ]),
    ).toBeNull();
  });
});
