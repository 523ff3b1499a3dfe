// One evaluation run, start to finish: fix the episode selection (or read it back on --resume), reuse finished rows,
// evaluate the rest with N workers, append each row as it finishes, then compact the results files and hand the rows
// to the report. A fatal failure (401/403/404) or an interrupt stops new work; whatever finished is kept on disk and
// reported, and the caller exits non-zero with the reason.
import { existsSync, statSync } from 'node:fs';
import { UserError } from '../core/errors.ts';
import { ensureDir, isEmptyDir, writeFileAtomic } from '../core/files.ts';
import { join } from 'node:path';
import type { Domain, Episode } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import { evaluateItem } from './item.ts';
import { runPool } from './pool.ts';
import type { Progress } from './progress.ts';
import { readResults, ResultsWriter } from './results.ts';
import { RequestFailure, type RetryPolicy } from './retry.ts';
import { checkResumable, readRunConfig, writeRunConfig, type RunConfig } from './run-config.ts';
import { drawSelection, itemsOf, readSelection, writeSelection, type EvalItem } from './selection.ts';
import type { ItemRow, ModelSource, Setting } from './types.ts';

export interface RunOptions {
  out: string;
  resume: boolean;
  config: RunConfig;
  envs: Map<Domain, Env>;
  source: ModelSource;
  retry: RetryPolicy;
  progress: Progress;
  /** Aborting it stops the run like a fatal error (Ctrl-C). */
  interrupt?: AbortSignal;
  /** Episodes of a dataset (--dataset) to evaluate instead of generated ones. */
  dataset?: Episode[];
  /** Files written into the run folder with the selection (name → contents), e.g. <domain>-selection.json. */
  files?: Record<string, string>;
}

export interface RunOutcome {
  /** Final row per evaluated item, in selection order (items never reached are absent). */
  rows: ItemRow[];
  items: EvalItem[];
  settings: Setting[];
  /** Items asked in this invocation (not reused). */
  asked: number;
  reused: number;
  repairedFiles: string[];
  /** Why the run stopped early, if it did. */
  stopped: { reason: 'fatal'; failure: RequestFailure } | { reason: 'interrupted' } | null;
}

export async function runEvaluation(options: RunOptions): Promise<RunOutcome> {
  const { out, config, envs, source, progress } = options;
  const { settings, n, seed } = config;

  // 1. The selection: drawn and written once, read back on resume.
  let previous: ReturnType<typeof readResults> = { rows: new Map(), repaired: [] };
  if (existsSync(out) && !statSync(out).isDirectory()) throw new UserError(`--out ${out} is a file, not a folder`);
  if (options.resume) {
    checkResumable(readRunConfig(out), config);
    previous = readResults(out);
  } else if (!isEmptyDir(out)) {
    throw new UserError(`--out ${out} exists and is not empty (use --resume to continue that run, or another --out)`);
  }
  // Episodes are drawn before anything is written: a source that cannot supply them leaves no half-made folder.
  const selection = options.resume
    ? readSelection(out)
    : drawSelection(settings, envs, n, seed, config.extra as Record<Domain, Record<string, unknown>>, options.dataset);
  const items = settings.flatMap((s) => itemsOf(s, selection, n, seed));
  ensureDir(out);
  if (!options.resume) writeSelection(out, selection);
  for (const [name, contents] of Object.entries(options.files ?? {})) writeFileAtomic(join(out, name), contents);
  writeRunConfig(out, config);

  // 2. Reused rows and the work left.
  const limit = config.runtime.limit;
  const perSetting = new Map<string, number>();
  const inScope = items.filter((item) => {
    const seen = perSetting.get(item.settingKey) ?? 0;
    perSetting.set(item.settingKey, seen + 1);
    return limit === null || seen < limit;
  });
  const final = new Map<string, ItemRow>();
  for (const item of items) {
    const row = previous.rows.get(item.id);
    if (row) final.set(item.id, row);
  }
  const pending = inScope.filter((item) => final.get(item.id)?.status !== 'ok');
  const reused = inScope.length - pending.length;

  // 3. Evaluate. A fatal failure aborts the run signal: no new items, in-flight requests are cancelled.
  const controller = new AbortController();
  const onInterrupt = () => controller.abort(new Error('interrupted'));
  options.interrupt?.addEventListener('abort', onInterrupt, { once: true });
  let fatal: RequestFailure | null = null;
  const writer = new ResultsWriter(out);
  let asked = 0;
  progress.start(pending.length, reused);
  try {
    await runPool(
      pending,
      config.runtime.workers,
      async (item) => {
        const env = envs.get(item.setting.domain)!;
        try {
          const row = await evaluateItem(item, {
            env,
            source,
            retry: options.retry,
            seed,
            signal: controller.signal,
            onRetry: () => progress.retry(),
          });
          if (controller.signal.aborted && row.status === 'error') return; // cancelled by the stop, not a real failure
          writer.append(row);
          final.set(item.id, row);
          asked++;
          progress.tick(row.status === 'ok');
        } catch (error) {
          if (!(error instanceof RequestFailure) || error.kind !== 'fatal') throw error;
          if (!controller.signal.aborted) {
            fatal = error;
            controller.abort(error);
          }
        }
      },
      controller.signal,
    );
  } finally {
    progress.stop();
    options.interrupt?.removeEventListener('abort', onInterrupt);
  }

  // 4. One row per item, in order.
  const rows = items.map((item) => final.get(item.id)).filter((r): r is ItemRow => r !== undefined);
  writer.compact(rows);
  const stopped =
    fatal !== null
      ? { reason: 'fatal' as const, failure: fatal as RequestFailure }
      : controller.signal.aborted
        ? { reason: 'interrupted' as const }
        : null;
  return { rows, items: inScope, settings, asked, reused, repairedFiles: previous.repaired, stopped };
}
