// Summaries of scored rows: accuracy, interval method per environment, invalid count, exact match, metric means
// (booleans as rates, nulls skipped), clustering by example, environment breakdowns, and the harness's own summary
// for the domains it scores (its numbers against the harness itself: tests/rewards/metbench-harness.test.ts).
import { describe, expect, it } from 'vitest';
import { metricMeans, summarizeScores } from '../../core/summary.ts';
import { shellEnv } from '../../envs/shell/index.ts';
import { wilsonBounds, meanInterval } from '../../core/stats.ts';
import type { ScoredRow } from '../../core/score.ts';

const shellRows: ScoredRow[] = ['FINAL ANSWER: 1', 'FINAL ANSWER: 2', '1 or 2', 'FINAL ANSWER: 1', '3'].map(
  (response) => ({
    input: { target: '1', response, meta: { ballMoves: 2 } },
    score: shellEnv.score({ target: '1', response }),
  }),
);

function graded(reward: number, metrics: ScoredRow['score']['metrics'], initialState = 'b', target = 't'): ScoredRow {
  return { input: { target, response: '', initialState }, score: { reward, valid: true, prediction: 'x', metrics } };
}

describe('summarizeScores', () => {
  it('shell: accuracy, Wilson interval, invalid count, exact match, breakdown', () => {
    const s = summarizeScores(shellEnv, shellRows);
    expect(s.count).toBe(5);
    expect(s.accuracy).toBeCloseTo(0.4);
    expect(s.ci95).toEqual({ ...wilsonBounds(2, 5)!, method: 'wilson' });
    expect(s.harness).toMatchObject({ count: 5, accuracy: 0.4, invalid_pred_count: 1, accuracy_ci_method: 'wilson' });
    expect(s.invalid).toBe(1);
    expect(s.exactMatch).toBeCloseTo(0.4);
    expect(s.metrics).toEqual({ exact: 0.4 });
    expect(s.breakdown).toEqual({
      predictions: { '1': 2, '2': 1, '3': 1, invalid: 1 },
      accuracyByBallMoves: { '2': { count: 5, accuracy: 0.4 } },
    });
  });

  it("'mean' interval: each row its own example unless a cluster key groups them", () => {
    const env = { domain: 'rem' as const, intervalMethod: 'mean' as const };
    const rows = [graded(1, {}, 'a'), graded(0.5, {}, 'a'), graded(0.25, {}, 'b'), graded(0.75, {}, 'c')];
    const s = summarizeScores(env, rows);
    expect(s.accuracy).toBeCloseTo(0.625);
    expect(s.ci95).toEqual({ ...meanInterval([1, 0.5, 0.25, 0.75])!, method: 'mean' });
    const byBoard = summarizeScores(env, rows, { clusterOf: (row) => row.input.initialState! });
    expect(byBoard.ci95).toEqual({ ...meanInterval([0.75, 0.25, 0.75])!, method: 'mean' });
  });

  it('one shell row: the harness gives a Wilson interval at n = 1', () => {
    const s = summarizeScores(shellEnv, shellRows.slice(0, 1));
    expect(s.ci95).toEqual({ low: 0.2065493143772374, high: 1, method: 'wilson' });
  });

  it('exact match comes from exactFen when the reward is graded', () => {
    const env = { domain: 'chess' as const, intervalMethod: 'mean' as const };
    const s = summarizeScores(env, [
      graded(1, { exactFen: false }),
      graded(0.9, { exactFen: true }),
      graded(0.5, { exactFen: false }),
    ]);
    expect(s.exactMatch).toBeCloseTo(1 / 3);
  });

  it('no rows: nothing to report, no interval', () => {
    const s = summarizeScores(shellEnv, []);
    expect(s).toMatchObject({ count: 0, accuracy: null, ci95: null, invalid: 0, exactMatch: null, metrics: {} });
    expect(s.breakdown).toBeUndefined();
  });
});

describe('metricMeans', () => {
  it('averages numbers, counts booleans as rates, skips nulls', () => {
    const rows = [
      graded(0, { changed: 0.5, legal: true, n: null }),
      graded(0, { changed: null, legal: false, n: null }),
      graded(0, { changed: 1, legal: true, n: null }),
    ];
    expect(metricMeans(rows)).toEqual({ changed: 0.75, legal: 2 / 3, n: null });
  });
});
