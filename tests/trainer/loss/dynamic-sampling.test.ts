// DAPO's dynamic sampling policy: which groups a step keeps, how many prompts it draws next, and when it stops.
import { describe, expect, it } from 'vitest';
import { dynamicSamplingRound, informativeGroups, startTally } from '../../../trainer/loss/dynamic-sampling.ts';

describe('dynamic sampling', () => {
  it('tells groups with a spread from groups whose rewards are all equal', () => {
    expect(informativeGroups([1, 1, 0, 1, 0, 0, 0.5, 0.25], 2)).toEqual([false, true, false, true]);
    expect(() => informativeGroups([1, 0, 1], 2)).toThrow(/groups of 2/);
  });

  it('drops zero-spread groups, draws more, keeps up to the target and counts the surplus', () => {
    const options = { groupSize: 2, targetGroups: 3, maxExtraDraws: 2 };
    // Round 1, three prompts: only the second has a spread.
    const first = dynamicSamplingRound(startTally(), [1, 1, 0, 1, 0, 0], options);
    expect(first.keep).toEqual([1]);
    expect(first.complete).toBe(false);
    // 2 groups missing, 1 informative in 3 drawn: ceil(2 · 3 / 1) = 6, capped at one step's worth, 3
    expect(first.drawMore).toBe(3);
    expect(first.tally).toEqual({ kept: 1, drawn: 3, dropped: 2, surplus: 0, extraDraws: 0 });
    // Round 2, three more prompts, all informative: two fill the step, the third is surplus.
    const second = dynamicSamplingRound(first.tally, [0, 1, 1, 0, 0, 1], options);
    expect(second.keep).toEqual([0, 1]);
    expect(second.complete).toBe(true);
    expect(second.drawMore).toBe(0);
    expect(second.tally).toEqual({ kept: 3, drawn: 6, dropped: 2, surplus: 1, extraDraws: 1 });
  });

  it('sizes the next draw by the informative rate seen so far, up to maxPromptsPerDraw', () => {
    // 1 informative group in 4: 3 missing · 4 / 1 = 12 prompts
    const round = dynamicSamplingRound(startTally(), [0, 1, 0, 0, 1, 1, 0, 0], {
      groupSize: 2,
      targetGroups: 4,
      maxExtraDraws: 5,
      maxPromptsPerDraw: 16,
    });
    expect(round.drawMore).toBe(12);
    expect(
      dynamicSamplingRound(startTally(), [0, 1, 0, 0, 1, 1, 0, 0], {
        groupSize: 2,
        targetGroups: 4,
        maxExtraDraws: 5,
        maxPromptsPerDraw: 10,
      }).drawMore,
    ).toBe(10);
  });

  it('stops after maxExtraDraws extra rounds with what it has, even nothing', () => {
    const options = { groupSize: 2, targetGroups: 2, maxExtraDraws: 1 };
    const first = dynamicSamplingRound(startTally(), [0, 0, 1, 1], options);
    // nothing informative yet: 2 missing · 2 drawn / max(1, 0), capped at 2
    expect(first.drawMore).toBe(2);
    const second = dynamicSamplingRound(first.tally, [1, 1, 0, 0], options);
    expect(second.drawMore).toBe(0);
    expect(second.complete).toBe(false);
    expect(second.keep).toEqual([]);
    expect(second.tally).toEqual({ kept: 0, drawn: 4, dropped: 4, surplus: 0, extraDraws: 1 });
  });

  it('with maxExtraDraws 0 only filters', () => {
    const round = dynamicSamplingRound(startTally(), [0, 1, 1, 1], { groupSize: 2, targetGroups: 2, maxExtraDraws: 0 });
    expect(round).toMatchObject({ keep: [0], drawMore: 0, complete: false });
  });
});
