// Summaries of scored rows, one domain at a time: count, accuracy (mean reward) with its 95% interval (Wilson for
// binary rewards, a normal interval of per-board means for graded ones, as the environment says), invalid answers,
// exact-match rate, the mean of every numeric or boolean metric the reward reports (chess: changed-square accuracy,
// legal-board rate, …) and the environment's own breakdowns. Shared by `metrl score`, evaluation and training logs,
// so it knows nothing about any particular domain. Layer: core/ (an environment is seen only through SummaryEnv,
// which envs/env.ts's Env satisfies).
import { clusteredMeanInterval, mean, wilsonInterval, type Interval } from './stats.ts';
import type { ScoredRow } from './score.ts';

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
}

export interface SummaryOptions {
  /** Cluster key of a row for 'mean' intervals: the board it is about. Default: initial state + target. */
  clusterOf?: (row: ScoredRow, index: number) => string;
}

/** Metric names that mean "this answer is exactly right", in order of preference. */
const EXACT_METRICS = ['exact', 'exactFen'];

const defaultCluster = (row: ScoredRow): string => `${row.input.initialState ?? ''}\u0000${row.input.target}`;

export function summarizeScores(env: SummaryEnv, rows: ScoredRow[], options: SummaryOptions = {}): DomainSummary {
  const rewards = rows.map((r) => r.score.reward);
  const accuracy = mean(rewards);
  let interval: Interval | null;
  if (env.intervalMethod === 'wilson') {
    // Binary rewards: the number of successes is the sum of rewards.
    interval = wilsonInterval(Math.round(rewards.reduce((s, r) => s + r, 0)), rows.length);
  } else {
    const clusterOf = options.clusterOf ?? defaultCluster;
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
