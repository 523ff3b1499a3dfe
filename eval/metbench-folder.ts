// `metrl evaluate --metbench-files`: the run's rows again as a MET-Bench harness run folder, OUT/metbench/, so that
// the harness's own tools read it: `<domain>-<modality>.jsonl` in its row layout (eval/metbench-layout.ts), its
// summary.json (summarize() of each file, its expected count and status) and the official set's selection manifest.
// After a fatal stop the items never asked are "Aborted" error rows, as the harness writes them. One setting per
// domain and modality, as a harness run has; checked before anything is asked.
import { join } from 'node:path';
import { UserError } from '../core/errors.ts';
import { ensureDir, writeFileAtomic } from '../core/files.ts';
import { aggregateHarnessRows } from '../core/harness-summary.ts';
import type { Domain } from '../core/episode.ts';
import type { HarnessRow } from '../core/score.ts';
import type { Env } from '../envs/env.ts';
import { metbenchRow, summaryJson, type MetbenchEntry, type MetbenchSource } from './metbench-layout.ts';
import type { EvalItem } from './selection.ts';
import { COMPACT_STYLE } from './query-to-chat.ts';
import { settingKey } from './settings.ts';
import type { ItemRow, Setting } from './types.ts';

const METBENCH_FOLDER = 'metbench';

/** Refuse settings the harness's layout cannot hold, naming the first. */
export function checkMetbenchSettings(settings: Setting[]): void {
  const seen = new Map<string, Setting>();
  for (const s of settings) {
    const what = `--metbench-files: ${s.domain} ${s.modality}`;
    if (!['chess', 'shell', 'minecraft'].includes(s.domain))
      throw new UserError(`${what}: the harness evaluates chess, shell and minecraft only`);
    if (s.modality !== 'text' && s.modality !== 'image')
      throw new UserError(`${what}: the harness's files are text or image, not mixed`);
    if (s.task !== 'track' || s.cascade) throw new UserError(`${what}: the harness has no perception task or cascade`);
    if (s.prompt === COMPACT_STYLE)
      throw new UserError(
        `${what}: the compact layout's replies are scored after its trace, which the harness does not do; use a reference prompt (zero-shot, cot)`,
      );
    const key = `${s.domain}-${s.modality}`;
    if (seen.has(key))
      throw new UserError(
        `${what}: a harness run holds one setting per domain and modality; this run has two (${settingKey(seen.get(key)!)}, ${settingKey(s)}): run them separately`,
      );
    seen.set(key, s);
  }
}

/** The harness's result for an answered row: the one stored with it, or the answer scored again. */
function harnessRowOf(row: ItemRow, env: Env): HarnessRow {
  if (row.harness) return row.harness;
  const score = env.score({
    target: row.target,
    response: row.response ?? '',
    initialState: row.initial_state,
    ...(row.meta ? { meta: row.meta } : {}),
  });
  if (!score.harness) throw new UserError(`--metbench-files: ${row.domain} rows carry no harness score`);
  return score.harness;
}

export function writeMetbenchFolder(
  out: string,
  settings: Setting[],
  rows: ItemRow[],
  itemsPerSetting: Map<string, number>,
  envs: Map<Domain, Env>,
  files: Record<string, string> = {},
  /** Items a fatal stop left unasked (empty otherwise). */
  aborted: EvalItem[] = [],
): void {
  const dir = join(out, METBENCH_FOLDER);
  ensureDir(dir);
  const entries: Record<string, MetbenchEntry> = {};
  for (const setting of settings) {
    const key = settingKey(setting);
    const unasked: MetbenchSource[] = aborted
      .filter((item) => item.settingKey === key)
      .map((item) => ({
        domain: setting.domain,
        modality: setting.modality,
        prompt: setting.prompt,
        episode_id: item.episode.id,
        meta: item.episode.meta,
        target: item.target,
        initial_state: item.episode.initialState,
        status: 'error',
        error: 'Aborted',
        status_code: null,
      }));
    const mine = rows.filter((r) => r.setting === key);
    writeFileAtomic(
      join(dir, `${setting.domain}-${setting.modality}.jsonl`),
      [...mine, ...unasked].map((r, i) => `${metbenchRow(r, i)}\n`).join(''),
    );
    const ok = mine.filter((r) => r.status === 'ok');
    const env = envs.get(setting.domain)!;
    const expected = itemsPerSetting.get(key) ?? mine.length;
    const summary = {
      ...aggregateHarnessRows(
        ok.map((r) => harnessRowOf(r, env)),
        ok.map((r) => r.episode_id),
      ),
      completed: ok.length,
      errors: mine.length - ok.length + unasked.length,
      truncated: ok.filter((r) => r.finish_reason === 'length').length,
    };
    entries[`${setting.domain}/${setting.modality}`] = {
      ...summary,
      expected,
      status: summary.completed === expected ? 'complete' : 'incomplete',
    };
  }
  writeFileAtomic(join(dir, 'summary.json'), summaryJson(entries));
  for (const [name, contents] of Object.entries(files))
    if (name.endsWith('-selection.json')) writeFileAtomic(join(dir, name), contents);
}
