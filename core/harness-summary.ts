// The MET-Bench harness's summary of scored rows (metbench/scoring.py's aggregate_scores and evaluate.py's summarize),
// under its own key names and in its arithmetic, so that metrl's numbers equal the harness's: accuracy as Σ successes
// ÷ Σ trials; for chess (any row of more than one trial) an interval clustered by example, else a Wilson interval (one
// row is enough); exact match and exact board with Wilson half-widths; changed-square accuracy pooled (Σ right ÷ Σ
// changed squares) with a clustered interval; the legal-board rate with its half-width; completed, error and truncated
// counts. The harness has one row per example; when several rows share a cluster key here, their counts are added
// before the clustered intervals (with one row per key it is exactly the harness's).
import type { HarnessRow } from './score.ts';
import { clusteredRatioInterval, wilsonBounds } from './stats.ts';

/** summary.json's entry for one domain and modality, key for key (the optional groups appear as the harness adds them). */
export interface HarnessSummary {
  count: number;
  invalid_pred_count: number;
  accuracy: number;
  accuracy_pm: number | null;
  accuracy_ci_lower: number | null;
  accuracy_ci_upper: number | null;
  accuracy_ci_method: 'normal_across_examples' | 'wilson';
  accuracy_ci_unit: 'example';
  exact_match?: number;
  exact_match_pm?: number;
  exact_match_count?: number;
  exact_board_match?: number;
  exact_board_match_pm?: number;
  exact_board_match_count?: number;
  changed_square_accuracy?: number;
  changed_square_accuracy_pm?: number | null;
  changed_square_accuracy_ci_lower?: number | null;
  changed_square_accuracy_ci_upper?: number | null;
  changed_square_successes?: number;
  changed_square_trials?: number;
  exact_match_accuracy?: number;
  changed_sq_accuracy?: number;
  changed_sq_pm?: number | null;
  legal_board_rate?: number;
  legal_board_pm?: number;
  completed?: number;
  errors?: number;
  truncated?: number;
}

/** ci_half_width(): half the Wilson interval's width, 0 without trials. */
function halfWidth(successes: number, total: number): number {
  if (total === 0) return 0.0;
  const { low, high } = wilsonBounds(successes, total)!;
  return (high - low) / 2;
}

const sum = (rows: readonly HarnessRow[], key: keyof HarnessRow): number => rows.reduce((s, r) => s + (r[key] ?? 0), 0);

/** Counts added up per cluster key, in order of first appearance. */
function byCluster(
  rows: readonly HarnessRow[],
  clusters: readonly string[] | undefined,
  correct: keyof HarnessRow,
  total: keyof HarnessRow,
): [number, number][] {
  if (!clusters) return rows.map((r) => [r[correct] ?? 0, r[total] ?? 0]);
  const sums = new Map<string, [number, number]>();
  rows.forEach((r, i) => {
    const entry = sums.get(clusters[i]) ?? [0, 0];
    entry[0] += r[correct] ?? 0;
    entry[1] += r[total] ?? 0;
    sums.set(clusters[i], entry);
  });
  return [...sums.values()];
}

/** aggregate_scores(): the harness's summary of its per-row results; `clusters` (one key per row) for the intervals. */
export function aggregateHarnessRows(rows: readonly HarnessRow[], clusters?: readonly string[]): HarnessSummary {
  const totalSuccesses = sum(rows, 'successes');
  const totalTrials = sum(rows, 'trials');
  const graded = rows.some((r) => r.trials > 1);
  const interval = graded
    ? clusteredRatioInterval(byCluster(rows, clusters, 'successes', 'trials'))
    : totalTrials > 0
      ? wilsonBounds(totalSuccesses, totalTrials)
      : { low: 0.0, high: 0.0 };
  const out: HarnessSummary = {
    count: rows.length,
    invalid_pred_count: sum(rows, 'invalid_pred'),
    accuracy: totalTrials > 0 ? totalSuccesses / totalTrials : 0.0,
    accuracy_pm: interval ? (interval.high - interval.low) / 2 : null,
    accuracy_ci_lower: interval?.low ?? null,
    accuracy_ci_upper: interval?.high ?? null,
    accuracy_ci_method: graded ? 'normal_across_examples' : 'wilson',
    accuracy_ci_unit: 'example',
  };
  const exactTrials = sum(rows, 'exact_match_trials');
  if (exactTrials > 0) {
    const exact = sum(rows, 'exact_match');
    const board = sum(rows, 'exact_board_match');
    Object.assign(out, {
      exact_match: exact / exactTrials,
      exact_match_pm: halfWidth(exact, exactTrials),
      exact_match_count: exact,
      exact_board_match: board / exactTrials,
      exact_board_match_pm: halfWidth(board, exactTrials),
      exact_board_match_count: board,
    });
  }
  const changedTrials = sum(rows, 'changed_trials');
  if (changedTrials > 0) {
    const changed = sum(rows, 'changed_successes');
    const ci = clusteredRatioInterval(byCluster(rows, clusters, 'changed_successes', 'changed_trials'));
    Object.assign(out, {
      changed_square_accuracy: changed / changedTrials,
      changed_square_accuracy_pm: ci ? (ci.high - ci.low) / 2 : null,
      changed_square_accuracy_ci_lower: ci?.low ?? null,
      changed_square_accuracy_ci_upper: ci?.high ?? null,
      changed_square_successes: changed,
      changed_square_trials: changedTrials,
    });
  }
  if (rows.length > 0 && rows[0].legal_board !== undefined) {
    const legal = sum(rows, 'legal_board');
    Object.assign(out, {
      exact_match_accuracy: out.exact_match ?? 0.0,
      changed_sq_accuracy: out.changed_square_accuracy ?? 0.0,
      changed_sq_pm: 'changed_square_accuracy_pm' in out ? out.changed_square_accuracy_pm : 0.0,
      legal_board_rate: legal / rows.length,
      legal_board_pm: halfWidth(legal, rows.length),
    });
  }
  return out;
}
