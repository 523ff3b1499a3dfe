// 95% confidence intervals for accuracies, as the MET-Bench reference evaluator computes them: Wilson's score interval
// for binary outcomes (shell game, exact match), and a normal interval of the mean for graded scores (chess's
// per-square reward), where the mean is taken over clusters (boards) so that several samples of one board do not
// pretend to be independent. Fewer than two observations give no interval (null).

export interface Interval {
  low: number;
  high: number;
}

/** Two-sided 95% normal quantile. */
const Z95 = 1.959963984540054;

/** Wilson score interval for `successes` out of `n` Bernoulli trials; null when n < 2. */
export function wilsonInterval(successes: number, n: number, z = Z95): Interval | null {
  if (!(n >= 2)) return null;
  if (successes < 0 || successes > n) throw new RangeError(`wilsonInterval: ${successes} successes out of ${n}`);
  const p = successes / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const halfWidth = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  // At p = 0 or 1 the bound is exactly 0 or 1; say so rather than leave a rounding residue.
  return {
    low: successes === 0 ? 0 : Math.max(0, centre - halfWidth),
    high: successes === n ? 1 : Math.min(1, centre + halfWidth),
  };
}

export function mean(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Normal interval of the mean: mean ± z·s/√n with the sample standard deviation s; null when n < 2. */
export function meanInterval(values: readonly number[], z = Z95): Interval | null {
  const n = values.length;
  if (n < 2) return null;
  const m = mean(values)!;
  let squares = 0;
  for (const v of values) squares += (v - m) * (v - m);
  const standardError = Math.sqrt(squares / (n - 1) / n);
  return { low: m - z * standardError, high: m + z * standardError };
}

/**
 * Cluster-robust version of meanInterval: values sharing a cluster key (the same board) are averaged first, then the
 * interval is taken across clusters. With one value per cluster it equals meanInterval.
 */
export function clusteredMeanInterval(
  values: readonly number[],
  clusters: readonly string[],
  z = Z95,
): Interval | null {
  if (values.length !== clusters.length) throw new RangeError('clusteredMeanInterval: one cluster key per value');
  return meanInterval(clusterMeans(values, clusters), z);
}

/** Per-cluster means, in order of first appearance. */
export function clusterMeans(values: readonly number[], clusters: readonly string[]): number[] {
  const sums = new Map<string, { sum: number; count: number }>();
  values.forEach((v, i) => {
    const entry = sums.get(clusters[i]) ?? { sum: 0, count: 0 };
    entry.sum += v;
    entry.count += 1;
    sums.set(clusters[i], entry);
  });
  return [...sums.values()].map((e) => e.sum / e.count);
}
