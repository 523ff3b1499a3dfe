// Accuracy tables for environment summaries: group scored rows by a key and report n, accuracy and a Wilson 95%
// interval per group (binary rewards), plus optional per-group means of a numeric meta field (e.g. a baseline's
// expected accuracy). Used by the boxes and mcst summaries.
import { wilsonInterval, type Interval } from '../core/stats.ts';
import type { ScoredRow } from '../core/score.ts';

export interface AccuracyCell {
  n: number;
  correct: number;
  accuracy: number;
  ci95: Interval | null;
  [extra: string]: unknown;
}

/** Rows grouped by `keyOf` (rows whose key is null are left out), keys in natural order (numbers numerically). */
export function accuracyBy(
  rows: readonly ScoredRow[],
  keyOf: (row: ScoredRow) => string | number | null,
  means: Record<string, (row: ScoredRow) => number | null> = {},
): Record<string, AccuracyCell> {
  const groups = new Map<string, ScoredRow[]>();
  for (const row of rows) {
    const key = keyOf(row);
    if (key === null) continue;
    const list = groups.get(String(key)) ?? [];
    list.push(row);
    groups.set(String(key), list);
  }
  const keys = [...groups.keys()].sort((a, b) => {
    const [x, y] = [Number(a), Number(b)];
    return Number.isFinite(x) && Number.isFinite(y) ? x - y : a.localeCompare(b);
  });
  const out: Record<string, AccuracyCell> = {};
  for (const key of keys) out[key] = cell(groups.get(key)!, means);
  return out;
}

export function cell(
  rows: readonly ScoredRow[],
  means: Record<string, (row: ScoredRow) => number | null> = {},
): AccuracyCell {
  const correct = rows.filter((r) => r.score.reward >= 1).length;
  const result: AccuracyCell = {
    n: rows.length,
    correct,
    accuracy: rows.length ? correct / rows.length : 0,
    ci95: wilsonInterval(correct, rows.length),
  };
  for (const [name, metric] of Object.entries(means)) {
    const values = rows.map(metric).filter((v): v is number => v !== null && Number.isFinite(v));
    result[name] = values.length ? values.reduce((s, v) => s + v, 0) / values.length : null;
  }
  return result;
}
