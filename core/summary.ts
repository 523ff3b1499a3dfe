// Summaries of scored rows, one domain at a time: count, accuracy (mean reward) with its 95% interval, invalid
// answers, exact-match rate, the mean of every numeric or boolean metric the reward reports and the environment's own
// breakdowns. Shared by `metrl score`, evaluation and training logs, so it knows nothing about any particular domain.
// Where every row carries the MET-Bench harness's own counts (chess, shell, minecraft), the summary is the harness's
// (core/harness-summary.ts, kept whole under `harness`): accuracy, its interval (clustered by example for chess,
// Wilson from one row on otherwise), exact match, and changed-square accuracy pooled over squares, not averaged over
// rows. Other environments get a Wilson interval (binary rewards) or a normal interval of cluster means (graded).
// An environment is seen only through SummaryEnv, which envs/env.ts's Env satisfies.
import { aggregateHarnessRows, type HarnessSummary } from './harness-summary.ts';
import { clusteredMeanInterval, mean, wilsonInterval, type Interval } from './stats.ts';
import type { HarnessRow, ScoredRow } from './score.ts';

/**
 * How accuracy intervals are computed: 'wilson' for binary rewards (shell, boxes…), 'mean' for a normal interval of
 * the mean item reward, i.e. clustered by board for chess's per-square reward.
 */
export type IntervalMethod = 'wilson' | 'mean';

/** What a summary needs of an environment: its name, its interval method and its optional breakdowns. */
export interface SummaryEnv {
  domain: string;
  intervalMethod: IntervalMethod;
  summarize?(rows: ScoredRow[]): Record<string, unknown>;
}

export interface DomainSummary {
  domain: string;
  count: number;
  /** Mean reward, in [0, 1]; null without rows. */
  accuracy: number | null;
  /** 95% interval of the accuracy; null with fewer than two rows (or two boards). */
  ci95: (Interval & { method: IntervalMethod }) | null;
  /** Answers that could not be parsed (reward 0). */
  invalid: number;
  /** Share of rows answered exactly (the `exact` metric, chess's `exactFen`, else reward = 1). */
  exactMatch: number | null;
  /** Mean of each metric over the rows where it is not null (booleans count as 0/1). */
  metrics: Record<string, number | null>;
  /** Environment-specific breakdowns (env.summarize). */
  breakdown?: Record<string, unknown>;
  /** The harness's own summary of these rows (its summary.json entry), for the domains it scores. */
  harness?: HarnessSummary;
}

export interface SummaryOptions {
  /** Cluster key of a row for the intervals: the example it is about. Default: every row its own example. */
  clusterOf?: (row: ScoredRow, index: number) => string;
  /** Rows that failed before an answer (not in `rows`), for the harness's `errors` count. */
  errors?: number;
}

/** Metric names that mean "this answer is exactly right", in order of preference. */
const EXACT_METRICS = ['exact', 'exactFen'];

const defaultCluster = (_row: ScoredRow, index: number): string => String(index);

export function summarizeScores(env: SummaryEnv, rows: ScoredRow[], options: SummaryOptions = {}): DomainSummary {
  const clusterOf = options.clusterOf ?? defaultCluster;
  const harnessRows = rows.map((r) => r.score.harness);
  if (rows.length > 0 && harnessRows.every((h) => h !== undefined))
    return harnessSummary(env, rows, harnessRows as HarnessRow[], clusterOf, options.errors ?? 0);
  const rewards = rows.map((r) => r.score.reward);
  const accuracy = mean(rewards);
  let interval: Interval | null;
  if (env.intervalMethod === 'wilson') {
    // Binary rewards: the number of successes is the sum of rewards.
    interval = wilsonInterval(Math.round(rewards.reduce((s, r) => s + r, 0)), rows.length);
  } else {
    interval = clusteredMeanInterval(
      rewards,
      rows.map((row, i) => clusterOf(row, i)),
    );
  }
  const metrics = metricMeans(rows);
  const exactName = EXACT_METRICS.find((name) => name in metrics);
  const exactMatch = exactName !== undefined ? metrics[exactName] : mean(rewards.map((r) => (r === 1 ? 1 : 0)));
  const summary: DomainSummary = {
    domain: env.domain,
    count: rows.length,
    accuracy,
    // Rewards lie in [0, 1], so a normal interval that spills past either end is cut there.
    ci95: interval
      ? { low: Math.max(0, interval.low), high: Math.min(1, interval.high), method: env.intervalMethod }
      : null,
    invalid: rows.filter((r) => !r.score.valid).length,
    exactMatch,
    metrics,
  };
  if (env.summarize && rows.length > 0) summary.breakdown = env.summarize(rows);
  return summary;
}

/** The summary of rows the harness scores: its numbers, metrl's shape and breakdowns around them. */
function harnessSummary(
  env: SummaryEnv,
  rows: ScoredRow[],
  harnessRows: HarnessRow[],
  clusterOf: (row: ScoredRow, index: number) => string,
  errors: number,
): DomainSummary {
  const harness: HarnessSummary = {
    ...aggregateHarnessRows(
      harnessRows,
      rows.map((row, i) => clusterOf(row, i)),
    ),
    completed: rows.length,
    errors,
    truncated: rows.filter((r) => r.finishReason === 'length').length,
  };
  const metrics = metricMeans(rows);
  if ('changedSquareAccuracy' in metrics) metrics.changedSquareAccuracy = harness.changed_square_accuracy ?? null;
  const low = harness.accuracy_ci_lower;
  const high = harness.accuracy_ci_upper;
  const summary: DomainSummary = {
    domain: env.domain,
    count: rows.length,
    accuracy: harness.accuracy,
    ci95: low !== null && high !== null ? { low, high, method: env.intervalMethod } : null,
    invalid: harness.invalid_pred_count,
    exactMatch: harness.exact_match ?? harness.accuracy,
    metrics,
    harness,
  };
  if (env.summarize) summary.breakdown = env.summarize(rows);
  return summary;
}

/** Mean of every metric; booleans as 0/1, nulls skipped (e.g. changed-square accuracy when nothing changed). */
export function metricMeans(rows: ScoredRow[]): Record<string, number | null> {
  const sums = new Map<string, { sum: number; count: number }>();
  for (const row of rows) {
    for (const [name, value] of Object.entries(row.score.metrics)) {
      const entry = sums.get(name) ?? { sum: 0, count: 0 };
      sums.set(name, entry);
      if (value === null || (typeof value === 'number' && !Number.isFinite(value))) continue;
      entry.sum += typeof value === 'boolean' ? Number(value) : value;
      entry.count++;
    }
  }
  return Object.fromEntries([...sums.entries()].map(([name, e]) => [name, e.count > 0 ? e.sum / e.count : null]));
}
