// Learning curves of training runs as a Vega-Lite spec (the paper's Figure 5): test accuracy against step for the
// trained and the transfer modality with 95% interval bands, one panel per run side by side, and beneath them the
// mean rollout reward per step; the run's Game Start baseline is a dashed rule. Rendering is core/plot.ts's job; this
// file only shapes the data and the encoding.
import type { TopLevelSpec } from '../core/plot.ts';
import type { MetricsRow } from './metrics.ts';

export interface RunCurves {
  /** Panel title: the run folder's name, with its domain and modality. */
  label: string;
  rows: MetricsRow[];
}

/** Text blue squares, image red circles (the paper's ■ and ●); the trained modality solid, the transfer one dashed. */
const SERIES: Array<{ name: string; color: string; shape: string; dash: number[] }> = [
  { name: 'text (trained)', color: '#1f77b4', shape: 'square', dash: [1, 0] },
  { name: 'image (transfer)', color: '#d62728', shape: 'circle', dash: [5, 3] },
  { name: 'image (trained)', color: '#d62728', shape: 'circle', dash: [1, 0] },
  { name: 'text (transfer)', color: '#1f77b4', shape: 'square', dash: [5, 3] },
];

/** Scales over the series present in the data, so the legend lists only those. */
function seriesScales(present: Set<string>) {
  const series = SERIES.filter((s) => present.has(s.name));
  const domain = series.map((s) => s.name);
  return {
    color: { domain, range: series.map((s) => s.color) },
    shape: { domain, range: series.map((s) => s.shape) },
    dash: { domain, range: series.map((s) => s.dash) },
  };
}

export function learningCurveSpec(runs: RunCurves[]): TopLevelSpec {
  const evalPoints = runs.flatMap(({ label, rows }) =>
    rows.flatMap((r) =>
      r.type === 'eval'
        ? [{ run: label, step: r.step, modality: r.modality, series: `${r.modality} (${r.role === 'train' ? 'trained' : 'transfer'})`, accuracy: r.accuracy, low: r.low ?? r.accuracy, high: r.high ?? r.accuracy, n: r.n }]
        : [],
    ),
  );
  // The Game Start baseline of each run: a dashed grey rule across its panel.
  const baselinePoints = runs.flatMap(({ label, rows }) => rows.flatMap((r) => (r.type === 'baseline' ? [{ run: label, baseline: r.accuracy, name: 'Game Start' }] : [])));
  const trainPoints = runs.flatMap(({ label, rows }) =>
    rows.flatMap((r) => (r.type === 'train' ? [{ run: label, step: r.step, reward: r.rewardMean, validRate: r.validRate }] : [])),
  );
  const scales = seriesScales(new Set(evalPoints.map((p) => p.series)));
  const width = runs.length > 2 ? 240 : 320;
  const stepAxis = { field: 'step', type: 'quantitative' as const, title: 'step' };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    config: { font: 'DejaVu Sans', view: { stroke: '#ddd' }, legend: { symbolOpacity: 1, symbolStrokeWidth: 2 } },
    vconcat: [
      {
        data: { values: [...evalPoints, ...baselinePoints] },
        facet: { column: { field: 'run', type: 'nominal', title: null, header: { labelFontSize: 12, labelFontWeight: 'bold' } } },
        spec: {
          width,
          height: 220,
          layer: [
            {
              // Rows of the other layers have no `baseline` field and rows of this one no `accuracy`: Vega-Lite drops
              // points with a missing quantitative value, so each layer draws only its own rows (a filter transform
              // per layer made Vega's dataflow optimiser warn).
              mark: { type: 'rule', color: '#777', strokeDash: [2, 3], strokeWidth: 1.5 },
              encoding: { y: { field: 'baseline', type: 'quantitative' }, tooltip: [{ field: 'name' }, { field: 'baseline', format: '.3f' }] },
            },
            {
              mark: { type: 'errorband', opacity: 0.18 },
              encoding: {
                x: stepAxis,
                y: { field: 'low', type: 'quantitative', title: baselinePoints.length > 0 ? 'test accuracy (95% CI); dotted: Game Start' : 'test accuracy (95% CI)', scale: { domain: [0, 1] } },
                y2: { field: 'high' },
                color: { field: 'series', type: 'nominal', scale: scales.color, title: 'test modality' },
              },
            },
            {
              mark: { type: 'line', point: { filled: true, size: 45 } },
              encoding: {
                x: stepAxis,
                y: { field: 'accuracy', type: 'quantitative' },
                color: { field: 'series', type: 'nominal', scale: scales.color, title: 'test modality' },
                shape: { field: 'series', type: 'nominal', scale: scales.shape, title: 'test modality' },
                strokeDash: { field: 'series', type: 'nominal', scale: scales.dash, title: 'test modality' },
                tooltip: [{ field: 'series' }, { field: 'step' }, { field: 'accuracy', format: '.3f' }, { field: 'low', format: '.3f' }, { field: 'high', format: '.3f' }, { field: 'n' }],
              },
            },
          ],
        },
      },
      {
        data: { values: trainPoints },
        facet: { column: { field: 'run', type: 'nominal', title: null, header: { labels: false } } },
        spec: {
          width,
          height: 120,
          layer: [
            {
              mark: { type: 'line', color: '#999', strokeWidth: 1 },
              encoding: { x: stepAxis, y: { field: 'reward', type: 'quantitative', title: 'rollout reward', scale: { domain: [0, 1] } } },
            },
            {
              transform: [{ window: [{ op: 'mean', field: 'reward', as: 'smoothed' }], frame: [-4, 4], groupby: ['run'], sort: [{ field: 'step' }] }],
              mark: { type: 'line', color: '#333', strokeWidth: 2 },
              encoding: { x: stepAxis, y: { field: 'smoothed', type: 'quantitative' } },
            },
          ],
        },
      },
    ],
  } as TopLevelSpec;
}
