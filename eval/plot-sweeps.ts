// Evaluation sweeps as a Vega-Lite spec: accuracy against the number of actions (the paper's Figures 3-4) or against
// the share of image actions (Figure 6), with 95% interval bands, several models (one run folder each) side by side
// as coloured series, one panel per domain and modality (length sweeps) or per domain (image-ratio sweeps).
// Rendering is core/plot.ts's job; this file reads summary.json files and shapes the data.
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { join } from 'node:path';
import { UserError } from '../core/errors.ts';
import { readJson } from '../core/files.ts';
import type { TopLevelSpec } from '../core/plot.ts';
import { SUMMARY_FILE, type RunReport } from './report.ts';

export type SweepAxis = 'actions' | 'imageRatio';

interface SweepPoint {
  model: string;
  panel: string;
  /**
   * The line a point belongs to: points of one run, model and panel that are one sweep (a length sweep; mixed
   * settings over image ratios). A text-only or image-only setting on the image-ratio axis is a point of its own.
   */
  line: string;
  x: number;
  accuracy: number;
  low: number;
  high: number;
  n: number;
  invalid: number;
}

/** True when the folder is an evaluation run (it has a summary.json written by `metrl evaluate`). */
export function isEvalRun(dir: string): boolean {
  if (!existsSync(join(dir, SUMMARY_FILE)) || !existsSync(join(dir, 'config.json'))) return false;
  try {
    return readJson(join(dir, 'config.json'), z.object({ kind: z.unknown() }).loose()).kind === 'metrl-eval';
  } catch {
    return false;
  }
}

export function readRunReport(dir: string): RunReport {
  const path = join(dir, SUMMARY_FILE);
  try {
    return readJson(path, z.object({ settings: z.array(z.unknown()) }).loose()) as unknown as RunReport;
  } catch {
    throw new UserError(`${path}: not an evaluation summary`);
  }
}

/** Which knob the runs sweep: the number of actions or the image ratio (whichever takes several values). */
function sweepAxis(reports: RunReport[]): SweepAxis {
  const settings = reports.flatMap((r) => r.settings.map((s) => s.setting));
  const distinct = (f: (s: (typeof settings)[number]) => number) => new Set(settings.map(f)).size;
  const lengths = distinct((s) => s.actions);
  const ratios = distinct((s) => (s.modality === 'mixed' ? s.imageRatio : s.modality === 'image' ? 1 : 0));
  if (lengths < 2 && ratios < 2)
    throw new UserError('these evaluation runs are not a sweep: give several --actions or --image-ratio values');
  if (lengths >= 2 && ratios >= 2 && settings.some((s) => s.modality === 'mixed')) {
    throw new UserError('these runs sweep both the number of actions and the image ratio: plot them separately');
  }
  return lengths >= 2 ? 'actions' : 'imageRatio';
}

export function sweepPoints(reports: RunReport[], axis: SweepAxis): SweepPoint[] {
  const points: SweepPoint[] = [];
  for (const [run, report] of reports.entries()) {
    for (const s of report.settings) {
      const { setting, summary } = s;
      if (summary.accuracy === null) continue;
      const prompt =
        setting.task === 'perception'
          ? 'perception'
          : setting.shots > 0
            ? `${setting.prompt} (n=${setting.shots})`
            : setting.prompt;
      const panel = axis === 'actions' ? `${setting.domain}, ${setting.modality} actions` : setting.domain;
      const model = report.baseline ? report.model : `${report.model}, ${prompt}${setting.cascade ? ', cascade' : ''}`;
      const x =
        axis === 'actions'
          ? setting.actions
          : setting.modality === 'mixed'
            ? setting.imageRatio
            : setting.modality === 'image'
              ? 1
              : 0;
      const sweep = axis === 'actions' || setting.modality === 'mixed';
      points.push({
        model,
        panel,
        line: sweep ? `${run}|${model}|${panel}` : `${run}|${model}|${panel}|${setting.modality}|${x}`,
        x,
        accuracy: summary.accuracy,
        low: summary.ci95?.low ?? summary.accuracy,
        high: summary.ci95?.high ?? summary.accuracy,
        n: summary.count,
        invalid: summary.invalid,
      });
    }
  }
  return points.sort((a, b) => a.model.localeCompare(b.model) || a.panel.localeCompare(b.panel) || a.x - b.x);
}

export function sweepSpec(reports: RunReport[]): TopLevelSpec {
  const axis = sweepAxis(reports);
  const points = sweepPoints(reports, axis);
  const x = {
    field: 'x',
    type: 'quantitative' as const,
    title: axis === 'actions' ? 'number of actions' : 'fraction of image actions',
    ...(axis === 'imageRatio' ? { scale: { domain: [0, 1] } } : {}),
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    config: { font: 'DejaVu Sans', view: { stroke: '#ddd' } },
    data: { values: points },
    facet: {
      column: { field: 'panel', type: 'nominal', title: null, header: { labelFontSize: 12, labelFontWeight: 'bold' } },
    },
    spec: {
      width: 300,
      height: 220,
      layer: [
        {
          // Bands and lines join only the points of one sweep (`line`); every point also gets its own interval bar.
          mark: { type: 'errorband', opacity: 0.15 },
          encoding: {
            x,
            y: { field: 'low', type: 'quantitative', title: 'accuracy (95% CI)', scale: { domain: [0, 1] } },
            y2: { field: 'high' },
            color: { field: 'model', type: 'nominal', title: 'model', legend: { labelLimit: 420 } },
            detail: { field: 'line', type: 'nominal' },
          },
        },
        {
          mark: { type: 'rule', opacity: 0.6 },
          encoding: {
            x,
            y: { field: 'low', type: 'quantitative' },
            y2: { field: 'high' },
            color: { field: 'model', type: 'nominal', title: 'model', legend: { labelLimit: 420 } },
          },
        },
        {
          mark: { type: 'line', point: { filled: true, size: 45 } },
          encoding: {
            x,
            y: { field: 'accuracy', type: 'quantitative' },
            detail: { field: 'line', type: 'nominal' },
            color: { field: 'model', type: 'nominal', title: 'model', legend: { labelLimit: 420 } },
            tooltip: [
              { field: 'model' },
              { field: 'x' },
              { field: 'accuracy', format: '.3f' },
              { field: 'low', format: '.3f' },
              { field: 'high', format: '.3f' },
              { field: 'n' },
              { field: 'invalid' },
            ],
          },
        },
      ],
    },
  } as TopLevelSpec;
}
