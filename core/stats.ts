// 95% confidence intervals for accuracies. The MET-Bench harness's two, computed with its exact arithmetic
// (statsmodels' proportion_confint(method="wilson") and metbench/confidence.py's clustered_ratio_interval), and the
// older pair the environments' own breakdowns and the pretraining log still use: a Wilson interval and a normal interval
// of cluster means that give nothing below two observations (null).

export interface Interval {
  low: number;
  high: number;
}

/** Two-sided 95% normal quantile. */
const Z95 = 1.959963984540054;
/** scipy's norm.isf(0.025), which statsmodels uses: one unit in the last place above the literal in confidence.py. */
const WILSON_Z = 1.9599639845400545;

/**
 * statsmodels' Wilson interval, operation for operation (so that the bounds equal the harness's to the last bit): defined
 * from n = 1 on, not clipped and not rounded at 0 or 1; null only for n = 0.
 */
export function wilsonBounds(successes: number, n: number): Interval | null {
  if (!(n >= 1)) return null;
  if (successes < 0 || successes > n) throw new RangeError(`wilsonBounds: ${successes} successes out of ${n}`);
  const q = successes / n;
  const crit2 = WILSON_Z ** 2;
  const denominator = 1 + crit2 / n;
  const centre = (q + crit2 / (2 * n)) / denominator;
  const dist = (WILSON_Z * Math.sqrt((q * (1.0 - q)) / n + crit2 / (4.0 * n ** 2))) / denominator;
  return { low: centre - dist, high: centre + dist };
}

/** Wilson score interval for `successes` out of `n` Bernoulli trials, ends snapped to [0, 1]; null when n < 2. */
export function wilsonInterval(successes: number, n: number): Interval | null {
  if (!(n >= 2)) return null;
  const { low, high } = wilsonBounds(successes, n)!;
  // At p = 0 or 1 the bound is exactly 0 or 1; say so rather than leave a rounding residue.
  return {
    low: successes === 0 ? 0 : Math.max(0, low),
    high: successes === n ? 1 : Math.min(1, high),
  };
}

/**
 * metbench/confidence.py's clustered_ratio_interval: a 95% normal interval for Σ correct / Σ total with each pair an
 * example (a cluster), by the cluster delta method; pairs with total 0 are left out, fewer than two left give null.
 * With equal totals (chess's 64 squares) it is the mean example score ± 1.96 standard errors across examples.
 */
export function clusteredRatioInterval(counts: readonly (readonly [number, number])[]): Interval | null {
  const used = counts.filter(([, total]) => total > 0);
  const n = used.length;
  if (n < 2) return null;
  let total = 0;
  let correct = 0;
  for (const [c, t] of used) {
    total += t;
    correct += c;
  }
  const accuracy = correct / total;
  let residual = 0;
  for (const [c, size] of used) residual += (c - accuracy * size) ** 2;
  const margin = 1.959963984540054 * (Math.sqrt((n * residual) / (n - 1)) / total);
  return { low: Math.max(0.0, accuracy - margin), high: Math.min(1.0, accuracy + margin) };
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
