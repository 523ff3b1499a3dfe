// The `metrl evaluate` job: checked flags → environments, settings and model → run → summary.json and table.md.
// Exit status: 0 when every item was answered (wrong answers included), 1 when some items failed after their
// retries (their rows say why; --resume retries them), 2 for bad input and for a fatal stop (401/403/404 or an
// endpoint nobody answers at: every finished item is kept, the reason is printed), 130 after Ctrl-C.
import { resolve } from 'node:path';
import { existsSync, statSync } from 'node:fs';
import { UserError } from '../core/errors.ts';
import { writeFileAtomic } from '../core/files.ts';
import { envExtraFromFlags } from '../envs/cli-options.ts';
import { getEnv } from '../envs/registry.ts';
import type { Domain } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import type { EvaluateFlags } from '../scripts/commands/evaluate.ts';
import { isEvalRun, readRunReport } from './plot-sweeps.ts';
import { COMPACT_STYLE, type CompactTemplate } from './prompts.ts';
import { stderrProgress } from './progress.ts';
import { buildReport, renderTable, writeReport, SUMMARY_FILE, TABLE_FILE } from './report.ts';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.ts';
import { readRunConfig, type RunConfig } from './run-config.ts';
import { runEvaluation } from './run.ts';
import { expandSettings, parseModalities, parseNumberList, parseStringList, settingKey } from './settings.ts';
import { describeModel, openSource } from './sources/index.ts';
import type { Task } from './types.ts';

export async function evaluate(flags: EvaluateFlags): Promise<void> {
  if (flags.tables) return combineTables(flags.tables, flags.out);
  const model = describeModel({ checkpoint: flags.checkpoint, base: flags.base, model: flags.model, provider: flags.provider, endpoint: flags.endpoint, apiKeyEnv: flags['api-key-env'] });
  if (flags.resume && flags.out === undefined) throw new UserError('--resume needs --out DIR (the folder of the run to continue)');
  if (model.kind === 'checkpoint' && !existsSync(model.path)) throw new UserError(`--checkpoint ${model.path}: no such folder`);

  const domains = parseStringList<Domain>('domain', flags.domain);
  const envs = new Map<Domain, Env>();
  for (const d of domains) envs.set(d, await getEnv(d));
  const task = flags.task as Task;
  const defaultPrompt = model.kind === 'checkpoint' ? COMPACT_STYLE : 'zero-shot';
  const settings = expandSettings(
    {
      domains,
      modalities: flags.modality !== undefined ? parseModalities(flags.modality) : null,
      imageRatios: flags['image-ratio'] !== undefined ? parseNumberList('image-ratio', flags['image-ratio'], (v) => v >= 0 && v <= 1, 'a number in [0, 1]') : null,
      actions: parseNumberList('actions', flags.actions, (v) => Number.isInteger(v) && v >= 0 && v <= 1000, 'a whole number of actions in [0, 1000]'),
      prompts: flags.prompt !== undefined ? parseStringList('prompt', flags.prompt) : [defaultPrompt],
      shots: flags.shots ?? null,
      task,
      cascade: flags.cascade,
    },
    envs,
    model.kind === 'checkpoint' ? COMPACT_STYLE : undefined,
  );
  if (model.kind === 'baseline' && model.name === 'game-start' && task === 'perception') {
    throw new UserError('baseline:game-start predicts a state; it has no answer to --task perception (use baseline:random)');
  }
  if (model.kind === 'baseline' && flags.cascade) throw new UserError('--cascade needs a model that reads images; baselines do not');
  if ((flags.games !== undefined || flags.offset !== undefined) && !domains.includes('chess')) throw new UserError('--games and --offset apply to --domain chess');

  const extra: Record<string, Record<string, unknown>> = {};
  if (flags.games !== undefined) {
    const games = resolve(flags.games);
    if (!existsSync(games)) throw new UserError(`--games ${flags.games}: no such file`);
    extra.chess = { games };
  }
  if (flags.offset !== undefined) extra.chess = { ...extra.chess, offset: flags.offset };
  for (const [domain, options] of Object.entries(envExtraFromFlags(domains, flags))) extra[domain] = { ...extra[domain], ...options };
  const label = model.kind === 'hosted' ? model.id : model.kind === 'baseline' ? `baseline:${model.name}` : model.path;
  const out = resolve(flags.out ?? defaultOut(label));
  const config: RunConfig = {
    kind: 'metrl-eval',
    created: flags.resume ? readRunConfig(out).created : new Date().toISOString(),
    label,
    model,
    settings,
    n: flags.n,
    seed: flags.seed,
    sampling: { temperature: flags.temperature, max_tokens: flags['max-tokens'] },
    extra,
    runtime: { workers: flags.workers, limit: flags.limit ?? null, retries: flags.retries, timeout_s: flags.timeout },
  };
  const retry: RetryPolicy = { ...DEFAULT_RETRY, retries: flags.retries, timeoutMs: flags.timeout * 1000, baseDelayMs: flags.backoff * 1000 };

  const source = await openSource(model, {
    envs,
    sampling: { temperature: flags.temperature, maxTokens: flags['max-tokens'] },
    seed: flags.seed,
    compact: loadCompactTemplate,
    openCheckpoint: async (path, base) =>
      (await import('./sources/checkpoint.ts')).checkpointSource(path, { temperature: flags.temperature, maxTokens: flags['max-tokens'] }, flags.seed, envs, base),
  });

  const interrupt = new AbortController();
  const onSignal = () => interrupt.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let outcome;
  try {
    outcome = await runEvaluation({ out, resume: flags.resume, config, envs, source, retry, progress: stderrProgress('evaluate', flags.quiet), interrupt: interrupt.signal });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await source.close?.();
  }
  for (const file of outcome.repairedFiles) process.stderr.write(`evaluate: ${file}: cut a torn last line left by an interrupted run\n`);

  const itemsPerSetting = new Map<string, number>();
  for (const item of outcome.items) itemsPerSetting.set(item.settingKey, (itemsPerSetting.get(item.settingKey) ?? 0) + 1);
  for (const s of settings) if (!itemsPerSetting.has(settingKey(s))) itemsPerSetting.set(settingKey(s), 0);
  const report = buildReport(label, model.kind === 'baseline', settings, itemsPerSetting, outcome.rows, envs);
  writeReport(out, report);
  process.stdout.write(renderTable([report]));
  process.stdout.write(`\n${out}: ${SUMMARY_FILE}, ${TABLE_FILE}, per-item rows in <domain>-<modality>.jsonl (${outcome.asked} asked now, ${outcome.reused} reused)\n`);

  const done = outcome.rows.filter((r) => r.status === 'ok').length;
  if (outcome.stopped?.reason === 'fatal') {
    throw new UserError(`stopped: ${outcome.stopped.failure.message}${hint(outcome.stopped.failure.status, model)}. ${done} finished items are kept in ${out}; fix the cause and rerun with --resume --out ${out}`);
  }
  if (outcome.stopped?.reason === 'interrupted') {
    process.stderr.write(`evaluate: interrupted; ${done} finished items kept; continue with --resume --out ${out}\n`);
    process.exit(130);
  }
  const failed = report.settings.reduce((s, r) => s + r.errors, 0);
  if (failed > 0) {
    process.stderr.write(`evaluate: ${failed} items failed after retries (see the error field of their rows); rerun with --resume --out ${out} to retry them\n`);
    process.exitCode = 1;
  }
}

/** `--tables RUN…`: one markdown table from finished runs, the models side by side. */
function combineTables(dirs: string[], out?: string): void {
  const reports = dirs.map((dir) => {
    if (!isEvalRun(dir)) throw new UserError(`--tables ${dir}: not an evaluation run folder (no summary.json from metrl evaluate)`);
    return readRunReport(dir);
  });
  const table = renderTable(reports);
  if (out !== undefined) {
    if (existsSync(out) && statSync(out).isDirectory()) throw new UserError(`--out ${out}: is a folder; with --tables give a file name`);
    writeFileAtomic(out, table);
  }
  process.stdout.write(table);
}

function hint(status: number | null, model: ReturnType<typeof describeModel>): string {
  const keyVar = model.kind === 'hosted' ? model.api_key_env : undefined;
  if (status === 401) return keyVar ? ` (is ${keyVar} a valid key?)` : ' (the endpoint wants a key: --api-key-env NAME)';
  if (status === 403) return ' (the key has no access to this model or provider)';
  if (status === 404) return ' (check the model id, --provider or --endpoint URL)';
  return '';
}

function defaultOut(label: string): string {
  const slug = label.replace(/^.*[\\/](?=[^\\/]+$)/, '').replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 40);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `runs/eval-${slug}-${stamp}`;
}

async function loadCompactTemplate(): Promise<CompactTemplate> {
  return (await import('./compact.ts')).compactTemplate;
}
