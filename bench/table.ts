// Benchmark rows and the printed table. Each bench/*.bench.ts module exports `run(): Promise<BenchRow[]>`.
export interface BenchRow {
  group: string; // e.g. "chess render"
  name: string; // e.g. "image actions/s @512px"
  value: number;
  unit: string;
  note?: string; // target or context, e.g. "target ≥ 500"
}

export function formatTable(rows: BenchRow[]): string {
  const cells = rows.map((r) => [r.group, r.name, formatNumber(r.value), r.unit, r.note ?? '']);
  const header = ['group', 'measure', 'value', 'unit', 'note'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) =>
    c
      .map((x, i) => (i === 2 ? x.padStart(widths[i]) : x.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

/** Time `fn` repeatedly for at least `minMs`; returns operations per second (fn returns how many operations it did). */
export async function opsPerSecond(fn: () => number | Promise<number>, minMs = 1500): Promise<number> {
  await fn(); // warm-up
  let ops = 0;
  const start = performance.now();
  while (performance.now() - start < minMs) ops += await fn();
  return ops / ((performance.now() - start) / 1000);
}
