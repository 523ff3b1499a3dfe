// The charts of `metrl view`, as Vega-Lite specs the page draws: the learning curves of the training runs (the very
// spec `metrl plot` renders, trainer/logs/curves.ts), and per evaluation folder its accuracy per setting with 95% intervals
// (from summary.json, or from the rows written so far while `metrl evaluate` runs) or, for a sweep, `metrl plot`'s
// sweep figure (eval/plot-sweeps.ts). Read afresh on each request, so rows a running job appends show up.
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { TopLevelSpec } from '../../core/plot.ts';
import { learningCurveSpec } from '../../trainer/logs/curves.ts';
import { MetricsRowSchema, type MetricsRow } from '../../trainer/logs/metrics.ts';
import { readRunReport, sweepSpec } from '../plot-sweeps.ts';
import { SUMMARY_FILE, type RunReport } from '../report.ts';
import { readRows, schemaRows } from './jsonl-rows.ts';
import { METRICS_FILE, readConfig, type ViewedFolder } from './run-folder.ts';
import { folderSamples } from './samples.ts';

interface EvalTableRow {
  setting: string;
  modality: string;
  n: number;
  accuracy: number | null;
  low: number | null;
  high: number | null;
  invalid: number;
}

export interface ChartsView {
  /** Learning curves of every training run given, side by side; null when none has rows yet. */
  curves: TopLevelSpec | null;
  /** Per evaluation folder: its settings as a table and a chart. */
  evaluations: Array<{ index: number; name: string; final: boolean; table: EvalTableRow[]; spec: TopLevelSpec | null }>;
  /** What is missing or was left out, one sentence each. */
  messages: string[];
}

const parseMetrics = schemaRows(MetricsRowSchema, 'a metrics row');

/** "shell-image-… (shell, trained on image)": the label `metrl plot` gives a run. */
function runLabel(folder: ViewedFolder): string {
  const config = readConfig(folder.root);
  const { domain, modality } = config ?? {};
  return domain && modality && !folder.name.includes(`${domain}-${modality}`)
    ? `${folder.name} (${domain}, trained on ${modality})`
    : folder.name;
}

function curves(folders: ViewedFolder[], messages: string[]): TopLevelSpec | null {
  const runs: Array<{ label: string; domain?: string; rows: MetricsRow[] }> = [];
  for (const folder of folders) {
    const read = readRows(join(folder.root, METRICS_FILE), parseMetrics);
    messages.push(...read.problems.map((p) => `${folder.name}/${p}`));
    if (read.rows.length === 0) {
      if (existsSync(folder.root)) messages.push(`${folder.name}: no metrics rows yet`);
      continue;
    }
    if (!read.rows.some((r) => r.type === 'eval'))
      messages.push(`${folder.name}: no evaluation rows yet (test accuracy appears after the step-0 evaluation)`);
    const domain = readConfig(folder.root)?.domain;
    runs.push({ label: runLabel(folder), ...(typeof domain === 'string' ? { domain } : {}), rows: read.rows });
  }
  return runs.length === 0 ? null : learningCurveSpec(runs);
}

/** The settings of an evaluation folder: summary.json when written, else the rows so far (mean reward, no interval). */
async function evalTable(
  folder: ViewedFolder,
): Promise<{ final: boolean; table: EvalTableRow[]; report: RunReport | null }> {
  if (existsSync(join(folder.root, SUMMARY_FILE))) {
    try {
      const report = readRunReport(folder.root);
      const table = report.settings.map((s) => ({
        setting: s.key,
        modality: s.setting.modality,
        n: s.summary.count,
        accuracy: s.summary.accuracy,
        low: s.summary.ci95?.low ?? null,
        high: s.summary.ci95?.high ?? null,
        invalid: s.summary.invalid,
      }));
      return { final: true, table, report };
    } catch {
      // an unreadable summary: fall back to the rows
    }
  }
  const bySetting = new Map<string, EvalTableRow>();
  for (const s of (await folderSamples(folder)).samples) {
    const row = bySetting.get(s.group) ?? {
      setting: s.group,
      modality: s.modality,
      n: 0,
      accuracy: 0,
      low: null,
      high: null,
      invalid: 0,
    };
    if (s.reward !== null) {
      row.accuracy = (row.accuracy! * row.n + s.reward) / (row.n + 1);
      row.n++;
    }
    if (s.valid === false) row.invalid++;
    bySetting.set(s.group, row);
  }
  return { final: false, table: [...bySetting.values()], report: null };
}

/** Text blue, image red (as in the learning curves), mixed purple. */
const MODALITY_COLORS: Record<string, string> = { text: '#1f77b4', image: '#d62728', mixed: '#9467bd' };

/** Accuracy per setting with its 95% interval, coloured by modality. */
function settingsSpec(table: EvalTableRow[]): TopLevelSpec | null {
  const values = table
    .filter((r) => r.accuracy !== null)
    .map((r) => ({ ...r, low: r.low ?? r.accuracy, high: r.high ?? r.accuracy }));
  if (values.length === 0) return null;
  const present = ['text', 'image', 'mixed'].filter((m) => values.some((v) => v.modality === m));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    data: { values },
    width: 320,
    height: { step: 22 },
    encoding: { y: { field: 'setting', type: 'nominal', title: null, sort: null, axis: { labelLimit: 260 } } },
    layer: [
      {
        mark: { type: 'rule' },
        encoding: {
          x: { field: 'low', type: 'quantitative', scale: { domain: [0, 1] }, title: 'accuracy (95% CI)' },
          x2: { field: 'high' },
          color: { field: 'modality', type: 'nominal', legend: null },
        },
      },
      {
        mark: { type: 'point', filled: true, size: 60 },
        encoding: {
          x: { field: 'accuracy', type: 'quantitative' },
          color: {
            field: 'modality',
            type: 'nominal',
            scale: { domain: present, range: present.map((m) => MODALITY_COLORS[m] ?? '#777') },
          },
          tooltip: [
            { field: 'setting' },
            { field: 'accuracy', format: '.3f' },
            { field: 'low', format: '.3f' },
            { field: 'high', format: '.3f' },
            { field: 'n' },
            { field: 'invalid' },
          ],
        },
      },
    ],
  } as TopLevelSpec;
}

export async function chartsView(folders: ViewedFolder[]): Promise<ChartsView> {
  const messages: string[] = [];
  const trainRuns = folders.filter((f) => f.kind === 'train');
  const evaluations: ChartsView['evaluations'] = [];
  for (const folder of folders.filter((f) => f.kind === 'eval')) {
    const { final, table, report } = await evalTable(folder);
    let spec = settingsSpec(table);
    // A sweep (several lengths, or mixed image ratios) gets `metrl plot`'s figure; text against image the chart above.
    const sweeps =
      report &&
      (new Set(report.settings.map((s) => s.setting.actions)).size > 1 ||
        report.settings.some((s) => s.setting.modality === 'mixed'));
    if (report && sweeps) {
      try {
        spec = sweepSpec([report]);
      } catch {
        // not a sweep: the per-setting chart
      }
    }
    evaluations.push({ index: folder.index, name: basename(folder.root), final, table, spec });
  }
  return { curves: trainRuns.length > 0 ? curves(trainRuns, messages) : null, evaluations, messages };
}
