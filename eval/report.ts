// What a run reports: per setting, the summary of its scored rows (core/summary.ts: accuracy with its 95% interval,
// invalid answers, metric means, breakdowns), plus error and missing counts, and for the cascade the transcription
// accuracy; written as summary.json and as a markdown table shaped like the paper's Tables 1-5 (rows: prompt setting,
// then model; columns: domain, modality, length or image ratio; cells: accuracy ± 95% CI and the invalid count).
import { join } from 'node:path';
import { wilsonInterval } from '../core/stats.ts';
import { writeFileAtomic, writeJsonAtomic } from '../core/files.ts';
import type { Domain } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import type { ScoredRow } from '../core/score.ts';
import { settingKey, settingLabel, varyingFields } from './settings.ts';
import { summarizeScores, type DomainSummary } from '../core/summary.ts';
import type { ItemRow, Setting, TokenUsage } from './types.ts';

interface SettingReport {
  key: string;
  label: string;
  setting: Setting;
  /** Items in this run's scope (after --limit). */
  items: number;
  /** Items that failed (status 'error'): not in the accuracy. */
  errors: number;
  /** Items never reached (fatal stop, interrupt). */
  missing: number;
  summary: DomainSummary;
  /** Cascade only: how many image actions the model transcribed correctly. */
  transcription?: {
    count: number;
    correct: number;
    accuracy: number | null;
    ci95: { low: number; high: number } | null;
  };
}

export interface RunReport {
  model: string;
  /** Baselines ignore the prompt, so tables and plots do not name one. */
  baseline: boolean;
  complete: boolean;
  settings: SettingReport[];
  usage: TokenUsage;
}

export const SUMMARY_FILE = 'summary.json';
export const TABLE_FILE = 'table.md';

/** A perception item is exact-match: binary, Wilson intervals, whatever the domain's own reward. */
const perceptionEnv = (domain: Domain) => ({ domain, intervalMethod: 'wilson' as const });

export function buildReport(
  model: string,
  baseline: boolean,
  settings: Setting[],
  itemsPerSetting: Map<string, number>,
  rows: ItemRow[],
  envs: Map<Domain, Env>,
): RunReport {
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const reports = settings.map((setting): SettingReport => {
    const key = settingKey(setting);
    const mine = rows.filter((r) => r.setting === key);
    const ok = mine.filter((r) => r.status === 'ok');
    const scored: ScoredRow[] = ok.map((r) => ({
      input: {
        target: r.target,
        response: r.response ?? '',
        initialState: r.initial_state,
        ...(r.meta ? { meta: r.meta } : {}),
      },
      score: {
        reward: r.reward ?? 0,
        valid: r.valid ?? false,
        prediction: r.prediction,
        metrics: r.metrics ?? {},
        ...(r.harness ? { harness: r.harness } : {}),
      },
      finishReason: r.finish_reason ?? null,
    }));
    const env = setting.task === 'perception' ? perceptionEnv(setting.domain) : envs.get(setting.domain)!;
    const items = itemsPerSetting.get(key) ?? mine.length;
    const report: SettingReport = {
      key,
      label: settingLabel(setting, varyingFields(settings)),
      setting,
      items,
      errors: mine.length - ok.length,
      missing: Math.max(0, items - mine.length),
      // One example per episode, as the harness clusters by example_id.
      summary: summarizeScores(env, scored, {
        clusterOf: (_row, i) => ok[i].episode_id,
        errors: mine.length - ok.length,
      }),
    };
    if (setting.cascade) {
      const steps = ok.flatMap((r) => r.transcriptions ?? []);
      const correct = steps.filter((t) => t.correct).length;
      report.transcription = {
        count: steps.length,
        correct,
        accuracy: steps.length ? correct / steps.length : null,
        ci95: wilsonInterval(correct, steps.length),
      };
    }
    for (const r of mine) {
      if (!r.usage) continue;
      usage.prompt_tokens += r.usage.prompt_tokens;
      usage.completion_tokens += r.usage.completion_tokens;
      usage.total_tokens += r.usage.total_tokens;
    }
    return report;
  });
  const complete = reports.every((r) => r.errors === 0 && r.missing === 0);
  return { model, baseline, complete, settings: reports, usage };
}

/** "91.6 ± 0.3": percentage and the half-width of the 95% interval (Wilson intervals are nearly symmetric). */
function formatAccuracy(summary: Pick<DomainSummary, 'accuracy' | 'ci95'>): string {
  if (summary.accuracy === null) return '–';
  const pct = (summary.accuracy * 100).toFixed(1);
  if (!summary.ci95) return pct;
  return `${pct} ± ${(((summary.ci95.high - summary.ci95.low) / 2) * 100).toFixed(1)}`;
}

function cell(r: SettingReport): string {
  const notes: string[] = [`${r.summary.invalid} invalid`];
  if (r.errors > 0) notes.push(`${r.errors} errors`);
  if (r.missing > 0) notes.push(`${r.missing} missing`);
  return `${formatAccuracy(r.summary)} (${notes.join(', ')})`;
}

/** Row of a table: the model and what the prompt did; columns: everything else that varies. */
function rowKey(s: Setting, baseline: boolean): string {
  if (baseline) return s.task === 'perception' ? 'Baseline, perception' : 'Baseline';
  if (s.task === 'perception') return 'Perception';
  const prompt = s.shots > 0 ? `${s.prompt} (n=${s.shots})` : s.prompt;
  return s.cascade ? `${prompt}, cascaded` : prompt;
}

function columnKey(s: Setting, varying: Set<keyof Setting>): string {
  // Perception reads single image actions: its column is the domain (Table 4), whatever the episodes' length.
  if (s.task === 'perception') return `${capitalise(s.domain)} (one image)`;
  const bits: string[] = [
    capitalise(s.domain),
    s.modality === 'mixed' ? `mixed p=${s.imageRatio}` : capitalise(s.modality),
  ];
  if (varying.has('actions')) bits.push(`T=${s.actions}`);
  return bits.join(' ');
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Markdown table for one or several runs (several models side by side, as in the paper). */
export function renderTable(reports: RunReport[]): string {
  const all = reports.flatMap((r) => r.settings.map((s) => s.setting));
  const varying = varyingFields(all);
  const columns = [...new Set(all.map((s) => columnKey(s, varying)))];
  const lines: string[] = [];
  // As in the paper: one block per prompt setting (Baseline, Zero-Shot, Few-Shot, …), the models within it.
  const blocks = new Map<string, Map<string, Map<string, SettingReport>>>();
  for (const report of reports) {
    for (const s of report.settings) {
      const block = rowKey(s.setting, report.baseline);
      if (!blocks.has(block)) blocks.set(block, new Map());
      const models = blocks.get(block)!;
      if (!models.has(report.model)) models.set(report.model, new Map());
      models.get(report.model)!.set(columnKey(s.setting, varying), s);
    }
  }
  lines.push(`| Setting | Model | ${columns.join(' | ')} |`);
  lines.push(`|---|---|${columns.map(() => '---:').join('|')}|`);
  for (const [block, models] of blocks) {
    for (const [model, cells] of models) {
      lines.push(
        `| ${block} | ${model} | ${columns.map((c) => (cells.has(c) ? cell(cells.get(c)!) : '')).join(' | ')} |`,
      );
    }
  }
  const notes = [
    'Accuracy in % (chess: per-square; shell, minecraft and perception: exact) ± half-width of the 95% interval; invalid = unparseable answers, scored 0.',
  ];
  const cascades = reports.flatMap((r) => r.settings.filter((s) => s.transcription));
  for (const s of cascades) {
    const t = s.transcription!;
    notes.push(
      `Cascade ${s.key}: ${t.correct}/${t.count} image actions transcribed correctly (${formatAccuracy({ accuracy: t.accuracy, ci95: t.ci95 ? { ...t.ci95, method: 'wilson' } : null })}).`,
    );
  }
  if (reports.some((r) => !r.complete))
    notes.push('Incomplete: some items failed or were not reached; `metrl evaluate --resume --out DIR` finishes them.');
  return `${lines.join('\n')}\n\n${notes.join('\n')}\n`;
}

export function writeReport(dir: string, report: RunReport): void {
  writeJsonAtomic(join(dir, SUMMARY_FILE), report);
  writeFileAtomic(join(dir, TABLE_FILE), renderTable([report]));
}
