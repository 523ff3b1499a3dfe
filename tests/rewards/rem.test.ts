// REM reward: `FINAL ANSWER: <target>` scores 1 on every generated item of every variant; the keyword rules of the
// paper decide the rest (first number for counting, exactly one of left/right, before/after/same time, one entity or
// "equal" for comparisons); summaries average the four categories without weights and report counting on GT ≥ 2.
import { describe, expect, it } from 'vitest';
import { parseRemAnswer, scoreRem } from '../../rewards/rem.ts';
import { summarizeRem } from '../../envs/rem/summary.ts';
import { remEnv } from '../../envs/rem/index.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import type { ScoredRow } from '../../core/score.ts';
import { Rng } from '../../core/rng.ts';

const episodes = [
  ...generateEpisodes(remEnv, {
    n: 160,
    actions: 4,
    split: 'train',
    seed: 31,
    modality: 'image',
    extra: { 'rem-objects': '8-24' },
  }),
  ...generateEpisodes(remEnv, {
    n: 30,
    actions: 4,
    split: 'train',
    seed: 31,
    modality: 'image',
    extra: { 'rem-variant': 'single-frame' },
  }),
  ...generateEpisodes(remEnv, {
    n: 20,
    actions: 4,
    split: 'train',
    seed: 31,
    modality: 'image',
    extra: { 'rem-variant': 'full-rotation' },
  }),
];

describe('rem reward', () => {
  it('gives 1 to FINAL ANSWER: <target> on every generated item, with or without meta', () => {
    for (const e of episodes) {
      expect(
        scoreRem({ target: e.target, response: `FINAL ANSWER: ${e.target}`, meta: e.meta }).reward,
        e.question,
      ).toBe(1);
      expect(
        scoreRem({ target: e.target, response: `Let me think.\nFINAL ANSWER: ${e.target}` }).reward,
        e.question,
      ).toBe(1);
    }
  });

  it('gives 0 to the other answers of the same question', () => {
    for (const e of episodes) {
      const c = e.meta.category;
      const others =
        c === 'counting'
          ? [String(Number(e.target) + 1)]
          : c === 'left-right'
            ? [e.target === 'left' ? 'right' : 'left']
            : c === 'temporal'
              ? ['before', 'after', 'same time'].filter((x) => x !== e.target)
              : (e.meta.options as string[]).filter((x) => x !== e.target);
      for (const o of others)
        expect(scoreRem({ target: e.target, response: `FINAL ANSWER: ${o}`, meta: e.meta }).reward).toBe(0);
    }
  });

  it('reads answers with the paper keyword rules', () => {
    expect(parseRemAnswer('FINAL ANSWER: 3 objects', 'counting')).toBe('3');
    expect(parseRemAnswer('I saw 2, maybe 3', 'counting')).toBe('2');
    expect(parseRemAnswer('FINAL ANSWER: 2.5', 'counting')).toBeNull();
    expect(parseRemAnswer('FINAL ANSWER: left or right', 'left-right')).toBeNull();
    expect(parseRemAnswer('**FINAL ANSWER:** Left.', 'left-right')).toBe('left');
    expect(parseRemAnswer('FINAL ANSWER: at the same time', 'temporal')).toBe('same time');
    expect(parseRemAnswer('FINAL ANSWER: before, then after', 'temporal')).toBeNull();
    const options = ['red cones', 'blue cones', 'equal'];
    expect(parseRemAnswer('FINAL ANSWER: red cone', 'comparison', options)).toBe('red cones');
    expect(parseRemAnswer('FINAL ANSWER: Blue', 'comparison', options)).toBe('blue cones');
    expect(parseRemAnswer('FINAL ANSWER: equal', 'comparison', options)).toBe('equal');
    expect(parseRemAnswer('FINAL ANSWER: more red cones than blue cones', 'comparison', options)).toBeNull();
    expect(parseRemAnswer('FINAL ANSWER: spheres', 'comparison', ['spheres', 'cuboids', 'equal'])).toBe('spheres');
  });

  it('summarises per category, their unweighted mean, and counting on ground truth >= 2', () => {
    const row = (target: string, category: string, right: boolean): ScoredRow => {
      const input = {
        target,
        response: right ? `FINAL ANSWER: ${target}` : 'FINAL ANSWER: 99',
        meta: { category, options: [target, 'x', 'equal'] },
      };
      return { input, score: scoreRem(input) };
    };
    const rows = [
      row('3', 'counting', true),
      row('1', 'counting', false),
      row('4', 'counting', false),
      row('left', 'left-right', true),
      row('before', 'temporal', false),
      row('red cones', 'comparison', true),
    ];
    const s = summarizeRem(rows) as Record<string, any>;
    expect(s.byCategory.counting).toEqual({ count: 3, accuracy: 1 / 3 });
    expect(s.overall).toBeCloseTo((1 / 3 + 1 + 0 + 1) / 4);
    expect(s.countingGroundTruthAtLeast2).toEqual({ count: 2, accuracy: 0.5 });
    expect(s.countingOvercountRate).toBeCloseTo(2 / 3);
    const generated = summarizeRem(
      episodes.map((e) => ({
        input: { target: e.target, response: `FINAL ANSWER: ${e.target}`, meta: e.meta },
        score: scoreRem({ target: e.target, response: `FINAL ANSWER: ${e.target}`, meta: e.meta }),
      })),
    ) as Record<string, any>;
    expect(Object.keys(generated.byVariant).sort()).toEqual(['baseline', 'full-rotation', 'single-frame']);
    expect(
      Object.values(generated.comparisonByCountDifference as Record<string, { accuracy: number }>).every(
        (c) => c.accuracy === 1,
      ),
    ).toBe(true);
    expect(Object.keys(generated.byObjectsSeen).length).toBeGreaterThan(1);
  });

  it('has baselines of the right form; answering from the first frame is exact on single-frame items', () => {
    const rng = new Rng(1);
    for (const e of episodes) {
      const random = remEnv.baselineAnswer!(e, 'random', rng);
      expect(scoreRem({ target: e.target, response: `FINAL ANSWER: ${random}`, meta: e.meta }).valid).toBe(true);
      const first = remEnv.baselineAnswer!(e, 'game-start', rng);
      if (e.meta.variant === 'single-frame') expect(first).toBe(e.target);
    }
  });
});
