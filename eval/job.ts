// The `metrl evaluate` job, in named phases: plan (options → environments, settings, model and run config), open the
// model source, run the items (resumable, interruptible), report (summary.json, table.md, the table on stdout) and
// finish (the exit status). scripts/commands/evaluate.ts maps its flags onto EvaluateOptions.
// Exit status: 0 when every item was answered (wrong answers included); 1 for a partial result, some items failed
// after their retries (their rows say why, the report scores the rest, one `metrl: error:` line says how many; --resume
// retries them); 2 for bad input and for a fatal stop (400/401/402/403/404 or an endpoint nobody answers at: every finished
// item is kept, the reason is printed; a stop before any answer leaves no run folder); 130 after Ctrl-C.
import { dirname, join, resolve } from 'node:path';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { UserError } from '../core/errors.ts';
import { removeQuietly, writeFileAtomic } from '../core/files.ts';
import { redact } from '../core/secrets.ts';
import { envExtraFromFlags } from '../envs/cli-options.ts';
import { getEnv } from '../envs/registry.ts';
import { datasetFormat, readDataset } from '../envs/dataset-reader.ts';
import { isHubAddress, readOfficialDataset } from '../envs/metbench/hub.ts';
import { isParquetDataset, OFFICIAL_LIMIT, type OfficialSelection } from '../envs/metbench/official.ts';
import type { Domain, Episode } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import { checkMetbenchSettings, writeMetbenchFolder } from './metbench-folder.ts';
import { isEvalRun, readRunReport } from './plot-sweeps.ts';
import { COMPACT_STYLE, type CompactTemplate } from './query-to-chat.ts';
import { stderrProgress } from './progress.ts';
import { buildReport, renderTable, writeReport, SUMMARY_FILE, TABLE_FILE, type RunReport } from './report.ts';
import { DEFAULT_RETRY, type RequestFailure, type RetryPolicy } from './retry.ts';
import { readRunConfig, type ModelDescription, type RunConfig } from './run-config.ts';
import { runEvaluation, type RunOutcome } from './run.ts';
import { expandSettings, parseModalities, parseNumberList, parseStringList, settingKey } from './settings.ts';
import { describeModel, openSource, type SourceSpec } from './sources/index.ts';
import { preflightEndpoint } from './endpoint-preflight.ts';
import type { ModelSource, SamplingSettings, Setting, Task } from './types.ts';
import { checkpointModelType } from '../models/load.ts';
import { BUILTIN_MODEL_TYPE } from '../models/registry.ts';
import { chooseEngine, type Engine, type OrtRuntime } from '../models/engine.ts';
import type { Device } from '../models/onnx/device.ts';

/** What one evaluation is asked to do. Lists are comma lists as typed (eval/settings.ts parses and checks them). */
export interface EvaluateOptions {
  /** The model: a checkpoint folder, a hosted model (provider or endpoint) or a baseline. */
  source: SourceSpec;
  domain: string;
  modality?: string;
  imageRatio?: string | number;
  actions: string | number;
  prompt?: string;
  shots?: number;
  task: Task;
  cascade: boolean;
  /** Items per setting (default 100; 500, the harness's selection, for an official MET-Bench set). */
  n?: number;
  seed: number;
  /** null: omitted from requests (`--temperature omit`). */
  temperature: number | null;
  maxTokens: number;
  tokenParameter: NonNullable<SamplingSettings['tokenParameter']>;
  reasoningEffort: string | null;
  /** Requests in flight. */
  workers: number;
  timeoutSeconds: number;
  retries: number;
  /** First retry delay in seconds. */
  backoffSeconds: number;
  resume: boolean;
  limit?: number;
  out?: string;
  /** chess: a games file and where episodes start in a game. */
  games?: string;
  offset?: 'start' | 'random';
  /** The environment options as given, by flag name (envs/cli-options.ts). */
  envFlags: Record<string, unknown>;
  quiet: boolean;
  /** Evaluate nothing: one table from these finished run folders (written to `out` when given). */
  tables?: string[];
  /**
   * A folder `metrl generate` wrote (envs/dataset-reader.ts): its rows are the episodes evaluated, its domain and
   * action count the setting's (--domain and --actions do not apply); --n caps the rows. Or an official MET-Bench set
   * (a local copy of its parquet shards, or hf://owner/name@revision): the harness's selection of --n tasks (500)
   * with trajectories cut to --actions (10), recorded in <domain>-selection.json (envs/metbench/official.ts).
   */
  dataset?: string;
  /** Also write the run as a MET-Bench harness run folder, OUT/metbench/ (eval/metbench-folder.ts). */
  metbenchFiles?: boolean;
  /** The inference engine for a --checkpoint (default: the model's, models/engine.ts), ONNX Runtime's threads and device. */
  engine?: Engine;
  threads?: number;
  device?: Device;
}

/** What the plan phase settles before anything is asked. */
interface Plan {
  model: ModelDescription;
  label: string;
  envs: Map<Domain, Env>;
  settings: Setting[];
  out: string;
  config: RunConfig;
  retry: RetryPolicy;
  /** The --dataset episodes, when given. */
  dataset?: Episode[];
  /** Files written into the run folder beside the selection (an official set's <domain>-selection.json). */
  files?: Record<string, string>;
  /** The engine a --checkpoint runs on. */
  engine: { engine: Engine; ort: OrtRuntime };
  /** Write OUT/metbench/ too. */
  metbenchFiles: boolean;
}

export async function evaluate(options: EvaluateOptions): Promise<void> {
  if (options.tables) return combineTables(options.tables, options.out);
  const plan = await planRun(options);
  const source = await openModel(plan, options);
  // An endpoint nobody answers at is one line now (after the key is read), not after the progress line and a retry.
  if (plan.model.kind === 'hosted' && plan.model.endpoint !== undefined)
    await preflightEndpoint(plan.model.endpoint, options.timeoutSeconds * 1000);
  if (source.loaded) {
    plan.config.loaded = source.loaded;
    // Printed only now that the model has loaded: an error while loading is the only line on stderr.
    if (!options.quiet) process.stderr.write(`tfjs backend: ${source.loaded.backend}\n`);
    const { ort } = source.loaded;
    if (!options.quiet && ort)
      process.stderr.write(
        `inference engine: ONNX Runtime (${ort.device}, ${ort.threads === null ? 'threads: all cores' : `${ort.threads} threads`})\n`,
      );
  }
  // What exists of the output before the run, so that a run stopped before it answered anything can leave no trace.
  const firstMade = firstMissing(plan.out);
  const outcome = await runItems(plan, source, options);
  if (outcome.stopped?.reason === 'fatal' && !options.resume && !outcome.rows.some((r) => r.status === 'ok')) {
    if (firstMade !== null) removeQuietly(firstMade);
    else for (const name of readdirSync(plan.out)) removeQuietly(join(plan.out, name));
    throw new UserError(
      `stopped: ${fatalReason(plan, outcome.stopped.failure)} Nothing was answered, so nothing was written`,
    );
  }
  reportRun(plan, outcome);
  finish(plan, outcome);
}

/** The highest folder of `path` that does not exist yet (null when `path` exists): what a run creates. */
function firstMissing(path: string): string | null {
  let missing: string | null = null;
  for (let d = path; !existsSync(d); d = dirname(d)) {
    missing = d;
    if (dirname(d) === d) break;
  }
  return missing;
}

/** A fatal stop's reason with its hint, as a sentence. */
function fatalReason(plan: Plan, failure: RequestFailure): string {
  const why = `${failure.message}${hint(failure.status, plan.model)}`;
  return `${why}${/[.?!]$/.test(why) ? '' : '.'}`;
}

/** Check the options against each other and the environments; settle the settings, the output folder and config.json. */
async function planRun(options: EvaluateOptions): Promise<Plan> {
  const model = describeModel(options.source);
  if (options.resume && options.out === undefined)
    throw new UserError('--resume needs --out DIR (the folder of the run to continue)');
  if (model.kind === 'checkpoint' && !existsSync(model.path))
    throw new UserError(`--checkpoint ${model.path}: no such folder`);

  const modalities = options.modality !== undefined ? parseModalities(options.modality) : null;
  const official =
    options.dataset !== undefined && (isHubAddress(options.dataset) || isParquetDataset(options.dataset))
      ? await officialSet(options.dataset, options, modalities)
      : undefined;
  const n = options.n ?? (official ? OFFICIAL_LIMIT : 100);
  const dataset = official
    ? official.episodes
    : options.dataset === undefined
      ? undefined
      : datasetEpisodes(options.dataset);
  const domains = dataset ? [dataset[0].domain] : parseStringList<Domain>('domain', options.domain);
  const envs = new Map<Domain, Env>();
  for (const d of domains) envs.set(d, await getEnv(d));
  const task = options.task;
  // The built-in model reads its compact layout; a Hugging Face checkpoint reads the reference wording, as hosted
  // models do, through its own chat template.
  const modelType = model.kind === 'checkpoint' ? checkpointModelType(model.path, model.base) : null;
  const builtin = modelType === BUILTIN_MODEL_TYPE;
  const ort: OrtRuntime = { threads: options.threads, device: options.device };
  if (modelType === null && (options.engine ?? options.threads ?? options.device) !== undefined) {
    throw new UserError(
      `--${options.engine !== undefined ? 'engine' : options.threads !== undefined ? 'threads' : 'device'} applies to --checkpoint (a model run in process)`,
    );
  }
  const engine = modelType === null ? 'tfjs' : chooseEngine(options.engine, modelType, ort);
  // The harness's "paper" prompt: chain of thought for Minecraft, zero-shot for chess and shell.
  const defaultPrompt = builtin
    ? COMPACT_STYLE
    : domains.length === 1 && domains[0] === 'minecraft'
      ? 'cot'
      : 'zero-shot';
  if (domains.includes('minecraft')) {
    if (model.kind === 'checkpoint' && (modalities ?? ['text']).some((m) => m !== 'text'))
      throw new UserError(
        'minecraft: a local checkpoint reads --modality text only (the screenshots reach hosted and endpoint chat models)',
      );
  }
  const settings = expandSettings(
    {
      domains,
      modalities,
      imageRatios:
        options.imageRatio !== undefined
          ? parseNumberList('image-ratio', options.imageRatio, (v) => v >= 0 && v <= 1, 'a number in [0, 1]')
          : null,
      actions: dataset
        ? [dataset[0].actions.length]
        : parseNumberList(
            'actions',
            options.actions,
            (v) => Number.isInteger(v) && v >= 0 && v <= 1000,
            'a whole number of actions in [0, 1000]',
          ),
      prompts: options.prompt !== undefined ? parseStringList('prompt', options.prompt) : [defaultPrompt],
      shots: options.shots ?? null,
      task,
      cascade: options.cascade,
    },
    envs,
    builtin ? COMPACT_STYLE : undefined,
  );
  if (model.kind === 'baseline' && model.name === 'game-start' && task === 'perception') {
    throw new UserError(
      'baseline:game-start predicts a state; it has no answer to --task perception (use baseline:random)',
    );
  }
  if (options.metbenchFiles) checkMetbenchSettings(settings);
  if (model.kind === 'baseline' && options.cascade)
    throw new UserError('--cascade needs a model that reads images; baselines do not');
  if ((options.games !== undefined || options.offset !== undefined) && !domains.includes('chess'))
    throw new UserError('--games and --offset apply to --domain chess');
  // The chess parsing travels with generated episodes; a dataset's rows bring their own (and `metrl score
  // --chess-answer` rescores any rows either way).
  if (dataset && options.envFlags['chess-answer'] !== undefined)
    throw new UserError(
      `--dataset ${options.dataset}: --chess-answer shapes generated episodes; rescore the run with metrl score --chess-answer instead`,
    );

  const extra: Record<string, Record<string, unknown>> = {};
  if (options.games !== undefined) {
    const games = resolve(options.games);
    if (!existsSync(games)) throw new UserError(`--games ${options.games}: no such file`);
    extra.chess = { games };
  }
  if (options.offset !== undefined) extra.chess = { ...extra.chess, offset: options.offset };
  for (const [domain, values] of Object.entries(envExtraFromFlags(domains, options.envFlags)))
    extra[domain] = { ...extra[domain], ...values };
  // The set and its revision are part of what a resumed run must match.
  if (official)
    extra[official.domain] = {
      ...extra[official.domain],
      dataset: official.source.repo,
      revision: official.source.revision,
      actions: official.actions,
    };
  const label = model.kind === 'hosted' ? model.id : model.kind === 'baseline' ? `baseline:${model.name}` : model.path;
  const out = resolve(options.out ?? defaultOut(label));
  const config: RunConfig = {
    kind: 'metrl-eval',
    created: options.resume ? readRunConfig(out).created : new Date().toISOString(),
    label,
    model,
    settings,
    n,
    seed: options.seed,
    sampling: {
      temperature: options.temperature,
      max_tokens: options.maxTokens,
      token_parameter: options.tokenParameter,
      reasoning_effort: options.reasoningEffort,
    },
    extra,
    runtime: {
      workers: options.workers,
      limit: options.limit ?? null,
      retries: options.retries,
      timeout_s: options.timeoutSeconds,
      backoff_s: options.backoffSeconds,
    },
  };
  const retry: RetryPolicy = {
    ...DEFAULT_RETRY,
    retries: options.retries,
    timeoutMs: options.timeoutSeconds * 1000,
    baseDelayMs: options.backoffSeconds * 1000,
  };
  return {
    model,
    label,
    envs,
    settings,
    out,
    config,
    retry,
    dataset,
    files: official ? { [official.manifestFile]: official.manifest } : undefined,
    engine: { engine, ort },
    metbenchFiles: options.metbenchFiles ?? false,
  };
}

/** An official MET-Bench set: the harness's selection for one T, with the pictures only when an image modality is asked. */
async function officialSet(
  path: string,
  options: EvaluateOptions,
  modalities: string[] | null,
): Promise<OfficialSelection> {
  const actions = parseNumberList(
    'actions',
    options.actions,
    (v) => Number.isInteger(v) && v >= 1 && v <= 100,
    'a whole number of actions in [1, 100]',
  );
  if (actions.length !== 1)
    throw new UserError(
      `--dataset ${path}: one --actions at a time with an official MET-Bench set (its selection depends on T)`,
    );
  if (options.task === 'perception' || options.cascade)
    throw new UserError(`--dataset ${path}: an official MET-Bench set is evaluated on --task track without --cascade`);
  const images = (modalities ?? ['text']).some((m) => m !== 'text');
  return readOfficialDataset(path, { limit: options.n ?? OFFICIAL_LIMIT, actions: actions[0], images });
}

/** The episodes of a dataset folder, all with one action count (a setting has one). Chat rows have no episode to lay out. */
function datasetEpisodes(path: string): Episode[] {
  if (datasetFormat(path).format === 'chat')
    throw new UserError(
      `--dataset ${path}: evaluate reads folders \`metrl generate\` wrote; chat rows are trained on and tested by \`metrl train --dataset\``,
    );
  const dataset = readDataset(path);
  const episodes = [...dataset.train, ...dataset.test].map((i) => i.episode);
  const lengths = new Set(episodes.map((e) => e.actions.length));
  if (lengths.size > 1)
    throw new UserError(
      `--dataset ${path}: rows with ${[...lengths].join(' and ')} actions; evaluate one action count at a time`,
    );
  return episodes;
}

/** The model behind one interface; the in-process checkpoint source and the compact template load only when used. */
function openModel(plan: Plan, options: EvaluateOptions): Promise<ModelSource> {
  const sampling: SamplingSettings = {
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    tokenParameter: options.tokenParameter,
    reasoningEffort: options.reasoningEffort,
  };
  return openSource(plan.model, {
    envs: plan.envs,
    sampling,
    seed: options.seed,
    compact: loadCompactTemplate,
    openCheckpoint: async (path, base) =>
      (await import('./sources/local-checkpoint.ts')).checkpointSource(
        path,
        sampling,
        options.seed,
        plan.envs,
        base,
        plan.engine,
      ),
  });
}

/** Ask every item not yet answered; Ctrl-C (or SIGTERM) stops asking and keeps what is finished. */
async function runItems(plan: Plan, source: ModelSource, options: EvaluateOptions): Promise<RunOutcome> {
  const interrupt = new AbortController();
  const onSignal = () => interrupt.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let outcome: RunOutcome;
  try {
    outcome = await runEvaluation({
      out: plan.out,
      resume: options.resume,
      config: plan.config,
      envs: plan.envs,
      source,
      retry: plan.retry,
      progress: stderrProgress('evaluate', options.quiet),
      interrupt: interrupt.signal,
      dataset: plan.dataset,
      files: plan.files,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await source.close?.();
  }
  for (const file of outcome.repairedFiles)
    process.stderr.write(`evaluate: ${file}: cut a torn last line left by an interrupted run\n`);
  return outcome;
}

/** summary.json and table.md in the run folder, and the table on stdout. */
function reportRun(plan: Plan, outcome: RunOutcome): RunReport {
  const itemsPerSetting = new Map<string, number>();
  for (const item of outcome.items)
    itemsPerSetting.set(item.settingKey, (itemsPerSetting.get(item.settingKey) ?? 0) + 1);
  for (const s of plan.settings) if (!itemsPerSetting.has(settingKey(s))) itemsPerSetting.set(settingKey(s), 0);
  const report = buildReport(
    plan.label,
    plan.model.kind === 'baseline',
    plan.settings,
    itemsPerSetting,
    outcome.rows,
    plan.envs,
  );
  writeReport(plan.out, report);
  if (plan.metbenchFiles) {
    const answered = new Set(outcome.rows.map((r) => r.id));
    const aborted = outcome.stopped?.reason === 'fatal' ? outcome.items.filter((i) => !answered.has(i.id)) : [];
    writeMetbenchFolder(plan.out, plan.settings, outcome.rows, itemsPerSetting, plan.envs, plan.files, aborted);
  }
  process.stdout.write(renderTable([report]));
  process.stdout.write(
    `\n${plan.out}: ${SUMMARY_FILE}, ${TABLE_FILE}, per-item rows in <domain>-<modality>.jsonl (${outcome.asked} asked now, ${outcome.reused} reused)\n`,
  );
  return report;
}

/** The exit status: a fatal stop is a UserError (2), an interruption 130, items that failed after retries 1. */
function finish(plan: Plan, outcome: RunOutcome): void {
  const { out } = plan;
  const done = outcome.rows.filter((r) => r.status === 'ok').length;
  if (outcome.stopped?.reason === 'fatal') {
    throw new UserError(
      `stopped: ${fatalReason(plan, outcome.stopped.failure)} ${done} finished items are kept in ${out}; fix the cause and rerun with --resume --out ${out}`,
    );
  }
  if (outcome.stopped?.reason === 'interrupted') {
    process.stderr.write(`evaluate: interrupted; ${done} finished items kept; continue with --resume --out ${out}\n`);
    process.exit(130);
  }
  // A partial result: the items answered are scored and reported (the table marks the run incomplete), the others
  // are rows with their error, which --resume retries. One error line, and exit status 1 to tell it from a full run.
  const failed = outcome.rows.filter((r) => r.status === 'error');
  if (failed.length > 0) {
    const first = failed[0].error ?? 'no reason recorded';
    process.stderr.write(
      `metrl: error: ${failed.length} of ${outcome.items.length} items could not be answered after their retries (first: ${redact(first.split('\n')[0])}); ` +
        `the ${done} answered are scored in ${out}; rerun with --resume --out ${out} to retry the others\n`,
    );
    process.exitCode = 1;
  }
}

/** `--tables RUN…`: one markdown table from finished runs, the models side by side. */
function combineTables(dirs: string[], out?: string): void {
  const reports = dirs.map((dir) => {
    if (!isEvalRun(dir))
      throw new UserError(`--tables ${dir}: not an evaluation run folder (no summary.json from metrl evaluate)`);
    return readRunReport(dir);
  });
  const table = renderTable(reports);
  if (out !== undefined) {
    if (existsSync(out) && statSync(out).isDirectory())
      throw new UserError(`--out ${out}: is a folder; with --tables give a file name`);
    writeFileAtomic(out, table);
  }
  process.stdout.write(table);
}

function hint(status: number | null, model: ModelDescription): string {
  const keyVar = model.kind === 'hosted' ? model.api_key_env : undefined;
  if (status === 401)
    return keyVar ? ` (is ${keyVar} a valid key?)` : ' (the endpoint wants a key: --api-key-env NAME)';
  if (status === 403) return ' (the key has no access to this model or provider)';
  if (status === 404) return ' (check the model id, --provider or --endpoint URL)';
  if (status === 402) return ' (the account has no credit left)';
  if (status === 400)
    return ' (the server refused the request: a reasoning model may need --temperature omit, or --token-parameter max_tokens for an older server; or a lower --max-tokens)';
  return '';
}

function defaultOut(label: string): string {
  const slug = label
    .replace(/^.*[\\/](?=[^\\/]+$)/, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .slice(0, 40);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `runs/eval-${slug}-${stamp}`;
}

async function loadCompactTemplate(): Promise<CompactTemplate> {
  return (await import('./compact.ts')).compactTemplate;
}
