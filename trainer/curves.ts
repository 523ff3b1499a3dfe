// Learning curves of training runs as a Vega-Lite spec (the paper's Figure 5): test accuracy against step for the
// trained and the transfer modality with 95% interval bands, one panel per run side by side, and beneath them the
// mean rollout reward per step. Rendering is core/plot.ts's job; this file only shapes the data and the encoding.
import type { TopLevelSpec } from '../core/plot.ts';
import type { MetricsRow } from './metrics.ts';

export interface RunCurves {
  /** Panel title: the run folder's name, with its domain and modality. */
  label: string;
  rows: MetricsRow[];
}

const MODALITY_COLORS = { domain: ['text', 'image'], range: ['#1f77b4', '#d62728'] };

export function learningCurveSpec(runs: RunCurves[]): TopLevelSpec {
  const evalPoints = runs.flatMap(({ label, rows }) =>
    rows.flatMap((r) =>
      r.type === 'eval'
        ? [{ run: label, step: r.step, modality: r.modality, series: `${r.modality} (${r.role === 'train' ? 'trained' : 'transfer'})`, accuracy: r.accuracy, low: r.low ?? r.accuracy, high: r.high ?? r.accuracy, n: r.n }]
        : [],
    ),
  );
  const trainPoints = runs.flatMap(({ label, rows }) =>
    rows.flatMap((r) => (r.type === 'train' ? [{ run: label, step: r.step, reward: r.rewardMean, validRate: r.validRate }] : [])),
  );
  const width = runs.length > 2 ? 240 : 320;
  const stepAxis = { field: 'step', type: 'quantitative' as const, title: 'step' };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    config: { font: 'DejaVu Sans', view: { stroke: '#ddd' } },
    vconcat: [
      {
        data: { values: evalPoints },
        facet: { column: { field: 'run', type: 'nominal', title: null, header: { labelFontSize: 12, labelFontWeight: 'bold' } } },
        spec: {
          width,
          height: 220,
          layer: [
            {
              mark: { type: 'errorband', opacity: 0.18 },
              encoding: {
                x: stepAxis,
                y: { field: 'low', type: 'quantitative', title: 'test accuracy (95% CI)', scale: { domain: [0, 1] } },
                y2: { field: 'high' },
                color: { field: 'modality', type: 'nominal', scale: MODALITY_COLORS },
              },
            },
            {
              mark: { type: 'line', point: { filled: true, size: 45 } },
              encoding: {
                x: stepAxis,
                y: { field: 'accuracy', type: 'quantitative' },
                color: { field: 'modality', type: 'nominal', scale: MODALITY_COLORS, title: 'test modality' },
                shape: { field: 'modality', type: 'nominal', scale: { domain: ['text', 'image'], range: ['square', 'circle'] }, legend: null },
                strokeDash: { field: 'series', type: 'nominal', title: 'series', legend: null },
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
