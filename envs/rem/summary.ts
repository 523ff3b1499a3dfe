// REM breakdowns for summaries (Env.summarize): accuracy per question category and overall (their unweighted mean),
// counting on ground truth ≥ 2 and its under/over-count shares, and the paper's Figure 4-5 axes.
import type { ScoredRow } from '../../core/score.ts';
import { categoryOf } from '../../rewards/rem.ts';

interface Tally {
  count: number;
  correct: number;
}

function add(map: Map<string, Tally>, key: string, reward: number): void {
  const t = map.get(key) ?? { count: 0, correct: 0 };
  t.count++;
  t.correct += reward;
  map.set(key, t);
}

function table(map: Map<string, Tally>): Record<string, { count: number; accuracy: number }> {
  const keys = [...map.keys()].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  return Object.fromEntries(
    keys.map((k) => [k, { count: map.get(k)!.count, accuracy: map.get(k)!.correct / map.get(k)!.count }]),
  );
}

/** Bins of the number of objects seen in a trajectory, as the paper's scaling plots group them. */
function seenBin(n: number): string {
  for (const [hi, label] of [
    [8, '0-8'],
    [16, '9-16'],
    [24, '17-24'],
    [36, '25-36'],
  ] as const)
    if (n <= hi) return label;
  return '37+';
}

/**
 * Accuracy per category and overall (their unweighted mean, over the categories present), counting on ground truth
 * ≥ 2, counting's under/over-count shares, and accuracy by variant, trajectory length, objects seen and duplicates
 * (the paper's Figure 4 axes), and comparison accuracy by the difference of the two counts (its Figure 5).
 */
export function summarizeRem(rows: ScoredRow[]): Record<string, unknown> {
  const byCategory = new Map<string, Tally>();
  const byVariant = new Map<string, Tally>();
  const byLength = new Map<string, Tally>();
  const countingAtLeast2 = new Map<string, Tally>();
  const bySeen = new Map<string, Tally>();
  const byDuplicates = new Map<string, Tally>();
  const comparisonByDifference = new Map<string, Tally>();
  let under = 0;
  let over = 0;
  let counted = 0;
  for (const row of rows) {
    const category = categoryOf(row.input.target, row.input.meta);
    const r = row.score.reward;
    add(byCategory, category, r);
    const meta = row.input.meta ?? {};
    if (typeof meta.variant === 'string') add(byVariant, meta.variant, r);
    if (typeof meta.frames === 'number') add(byLength, String(meta.frames), r);
    if (typeof meta.objectsSeen === 'number') add(bySeen, seenBin(meta.objectsSeen), r);
    if (typeof meta.duplicates === 'number') add(byDuplicates, String(meta.duplicates), r);
    const counts = meta.counts;
    if (category === 'comparison' && Array.isArray(counts) && counts.length === 2) {
      add(comparisonByDifference, String(Math.abs(Number(counts[0]) - Number(counts[1]))), r);
    }
    if (category === 'counting') {
      if (Number(row.input.target) >= 2) add(countingAtLeast2, 'all', r);
      const err = row.score.metrics.countError;
      if (typeof err === 'number') {
        counted++;
        if (err < 0) under++;
        if (err > 0) over++;
      }
    }
  }
  const categories = table(byCategory);
  const accuracies = Object.values(categories).map((c) => c.accuracy);
  const at2 = countingAtLeast2.get('all');
  return {
    overall: accuracies.length > 0 ? accuracies.reduce((s, a) => s + a, 0) / accuracies.length : null,
    byCategory: categories,
    countingGroundTruthAtLeast2: at2 ? { count: at2.count, accuracy: at2.correct / at2.count } : null,
    countingUndercountRate: counted > 0 ? under / counted : null,
    countingOvercountRate: counted > 0 ? over / counted : null,
    ...(byVariant.size > 0 ? { byVariant: table(byVariant) } : {}),
    ...(byLength.size > 0 ? { byTrajectoryLength: table(byLength) } : {}),
    ...(bySeen.size > 0 ? { byObjectsSeen: table(bySeen) } : {}),
    ...(byDuplicates.size > 0 ? { byDuplicates: table(byDuplicates) } : {}),
    ...(comparisonByDifference.size > 0 ? { comparisonByCountDifference: table(comparisonByDifference) } : {}),
  };
}
