// Learning curves of training runs as a Vega-Lite spec (the paper's Figure 5): test accuracy against step for the
// trained and the transfer modality with 95% interval bands, one panel per run side by side, and beneath them the
// mean rollout reward per step; the run's Game Start baseline is a dashed rule. Rendering is core/plot.ts's job; this
// file only shapes the data and the encoding.
import type { TopLevelSpec } from '../../core/plot.ts';
import type { MetricsRow } from './metrics.ts';

export interface RunCurves {
  /** Panel title: the run folder's name, with its domain and modality. */
  label: string;
  /** The run's environment (config.json), so that the y-axis can name the metric; absent when unknown. */
  domain?: string;
  rows: MetricsRow[];
}

/** Text blue squares, image red circles (the paper's ■ and ●); the trained modality solid, the transfer one dashed. */
const SERIES: Array<{ name: string; color: string; shape: string; dash: number[] }> = [
  { name: 'text (trained)', color: '#1f77b4', shape: 'square', dash: [1, 0] },
  { name: 'image (trained)', color: '#d62728', shape: 'circle', dash: [1, 0] },
  { name: 'text (transfer)', color: '#1f77b4', shape: 'square', dash: [6, 3] },
  { name: 'image (transfer)', color: '#d62728', shape: 'circle', dash: [6, 3] },
];

/** What "accuracy" means per environment (the reward's mean): chess scores squares, the others whole answers. */
const METRIC: Record<string, string> = { chess: 'per-square accuracy' };

/** The y-axis title's lines: the metric of every domain plotted ("test per-square accuracy" for chess runs). */
function metricTitle(domains: Array<string | undefined>): string[] {
  const known = [...new Set(domains.filter((d): d is string => d !== undefined))];
  if (known.length === 0) return ['test accuracy'];
  const names = [...new Set(known.map((d) => METRIC[d] ?? 'accuracy'))];
  if (names.length === 1) return [`test ${names[0]}`];
  return ['test accuracy', ...known.map((d) => `${d}: ${METRIC[d]?.replace(' accuracy', '') ?? 'exact answers'}`)];
}

/** Scales over the series present in the data, so the legend lists only those, trained (solid) first. */
function seriesScales(present: Set<string>) {
  const series = SERIES.filter((s) => present.has(s.name));
  const domain = series.map((s) => s.name);
  return {
    color: { domain, range: series.map((s) => s.color) },
    shape: { domain, range: series.map((s) => s.shape) },
    dash: { domain, range: series.map((s) => s.dash) },
  };
}

/** Half-width of the reward's moving mean: about a tenth of the run, none for runs of a few steps. */
export function smoothingHalfWidth(steps: number): number {
  return Math.floor(steps / 20);
}

export function learningCurveSpec(runs: RunCurves[]): TopLevelSpec {
  // Panels in the order the runs were given (a facet sorts its values otherwise).
  const order = runs.map((r) => r.label);
  const evalPoints = runs.flatMap(({ label, rows }) =>
    rows.flatMap((r) =>
      r.type === 'eval'
        ? [
            {
              run: label,
              step: r.step,
              modality: r.modality,
              series: `${r.modality} (${r.role === 'train' ? 'trained' : 'transfer'})`,
              accuracy: r.accuracy,
              low: r.low ?? r.accuracy,
              high: r.high ?? r.accuracy,
              n: r.n,
            },
          ]
        : [],
    ),
  );
  // The Game Start baseline of each run: a dotted grey rule across its panel.
  const baselinePoints = runs.flatMap(({ label, rows }) =>
    rows.flatMap((r) => (r.type === 'baseline' ? [{ run: label, baseline: r.accuracy, name: 'Game Start' }] : [])),
  );
  const maxStep = Math.max(1, ...runs.flatMap(({ rows }) => rows.map((r) => r.step)));
  const half = smoothingHalfWidth(maxStep);
  const rawName = 'per step';
  const smoothName = `moving mean of ${2 * half + 1} steps`;
  const trainPoints = runs.flatMap(({ label, rows }) =>
    rows.flatMap((r) =>
      r.type === 'train' ? [{ run: label, step: r.step, reward: r.rewardMean, line: rawName }] : [],
    ),
  );
  const scales = seriesScales(new Set(evalPoints.map((p) => p.series)));
  const width = runs.length > 2 ? 240 : 320;
  // Both rows of panels share one step axis: whole steps, from 0 to the last step of any run.
  const stepAxis = {
    field: 'step',
    type: 'quantitative' as const,
    title: 'step',
    scale: { domain: [0, maxStep], nice: false },
    axis: { tickMinStep: 1, format: 'd' },
  };
  const yExtent = { minExtent: 44, maxExtent: 44 };
  const legend = {
    title: 'test modality',
    symbolType: 'stroke',
    symbolStrokeWidth: 2.5,
    symbolSize: 300,
    labelLimit: 260,
    titleLimit: 320,
  };
  const runHeader = { sort: order };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    config: {
      font: 'DejaVu Sans',
      view: { stroke: '#ddd' },
      legend: { symbolOpacity: 1 },
      concat: { spacing: 16 },
      facet: { spacing: 24 },
    },
    // The two rows of panels get their own legends (modality above, reward lines below).
    resolve: {
      scale: { color: 'independent', strokeDash: 'independent' },
      legend: { color: 'independent', strokeDash: 'independent' },
    },
    vconcat: [
      {
        data: { values: [...evalPoints, ...baselinePoints] },
        facet: {
          column: {
            field: 'run',
            type: 'nominal',
            title: null,
            header: { labelFontSize: 12, labelFontWeight: 'bold', labelPadding: 4 },
            ...runHeader,
          },
        },
        spec: {
          width,
          height: 220,
          layer: [
            {
              // Rows of the other layers have no `baseline` field and rows of this one no `accuracy`: Vega-Lite drops
              // points with a missing quantitative value, so each layer draws only its own rows (a filter transform
              // per layer made Vega's dataflow optimiser warn).
              mark: { type: 'rule', color: '#777', strokeDash: [2, 3], strokeWidth: 1.5 },
              encoding: {
                y: { field: 'baseline', type: 'quantitative' },
                tooltip: [{ field: 'name' }, { field: 'baseline', format: '.3f' }],
              },
            },
            {
              mark: { type: 'errorband', opacity: 0.18 },
              encoding: {
                x: stepAxis,
                y: {
                  field: 'low',
                  type: 'quantitative',
                  title: [
                    ...metricTitle(runs.map((r) => r.domain)),
                    `95% CI${baselinePoints.length > 0 ? '; dotted: Game Start' : ''}`,
                  ],
                  scale: { domain: [0, 1] },
                  axis: { ...yExtent, titleLimit: 260 },
                },
                y2: { field: 'high' },
                color: { field: 'series', type: 'nominal', scale: scales.color, legend },
              },
            },
            {
              mark: { type: 'line', point: { filled: true, size: 45 } },
              encoding: {
                x: stepAxis,
                y: { field: 'accuracy', type: 'quantitative' },
                color: { field: 'series', type: 'nominal', scale: scales.color, legend },
                strokeDash: { field: 'series', type: 'nominal', scale: scales.dash, legend },
                shape: { field: 'series', type: 'nominal', scale: scales.shape, legend: null },
                tooltip: [
                  { field: 'series' },
                  { field: 'step' },
                  { field: 'accuracy', format: '.3f' },
                  { field: 'low', format: '.3f' },
                  { field: 'high', format: '.3f' },
                  { field: 'n' },
                ],
              },
            },
          ],
        },
      },
      {
        data: { values: trainPoints },
        facet: {
          column: { field: 'run', type: 'nominal', title: null, header: { labels: false, title: null }, ...runHeader },
        },
        spec: {
          width,
          height: 120,
          // The raw reward per step (thin grey) and its centred moving mean (thick black), named in the legend.
          transform: [
            {
              window: [{ op: 'mean', field: 'reward', as: 'smoothed' }],
              frame: [-half, half],
              groupby: ['run'],
              sort: [{ field: 'step' }],
            },
            { fold: half > 0 ? ['reward', 'smoothed'] : ['reward'], as: ['which', 'value'] },
            { calculate: `datum.which === 'reward' ? '${rawName}' : '${smoothName}'`, as: 'rollout reward' },
          ],
          mark: { type: 'line' },
          encoding: {
            x: stepAxis,
            y: {
              field: 'value',
              type: 'quantitative',
              title: 'rollout reward',
              scale: { domain: [0, 1] },
              axis: yExtent,
            },
            color: {
              field: 'rollout reward',
              type: 'nominal',
              scale: { domain: half > 0 ? [rawName, smoothName] : [rawName], range: ['#aaa', '#222'] },
              legend: { title: 'rollout reward', symbolType: 'stroke', symbolStrokeWidth: 2.5, labelLimit: 260 },
            },
            strokeWidth: {
              field: 'rollout reward',
              type: 'ordinal',
              sort: [rawName, smoothName],
              scale: { domain: [rawName, smoothName], range: [1, 2.5] },
              legend: null,
            },
          },
        },
      },
    ],
  } as TopLevelSpec;
}
