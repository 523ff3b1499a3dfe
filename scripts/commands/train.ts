// `metrl train`: GRPO on the built-in policy for one domain and modality, on generated episodes or on a dataset
// (--dataset: envs/dataset-reader.ts). Wiring only: flags and the config file are
// validated here (trainer/config.ts), the run folder is laid out, progress is shown; the work lives in trainer/.
//   RUN_DIR/config.json    domain, modality, base checkpoint, tfjs backend, ONNX Runtime device and threads (with
//                          engine 'ort'), the full training config (its `engine` included)
//   RUN_DIR/metrics.jsonl  one row per step (type "train") and per evaluation (type "eval", with its modality)
//   RUN_DIR/samples.jsonl  sample completions with their rewards
//   RUN_DIR/checkpoints/   step-N/ (PEFT adapter, optimizer and RNG state) and `latest`
import type { CommandModule } from 'yargs';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import cliProgress from 'cli-progress';
import { handler } from '../command.ts';
import { threadsFlag } from '../threads-flag.ts';
import { flagOptions, flagShape, schemaFlags, valuesFromFlags } from '../schema-flags.ts';
import { UserError } from '../../core/errors.ts';
import { readJson, writeJsonAtomic } from '../../core/files.ts';
import { CHECKPOINTS_DIR } from '../../core/paths.ts';
import { getEnv } from '../../envs/registry.ts';
import { readDataset, type Dataset } from '../../envs/dataset-reader.ts';
import { withModality } from '../../envs/generate.ts';
import { isHubAddress, readOfficialTrainingSet } from '../../envs/metbench/hub.ts';
import { isParquetDataset, OFFICIAL_LIMIT } from '../../envs/metbench/official.ts';
import { backendLine, initBackend } from '../../models/backend.ts';
import { chooseEngine } from '../../models/engine.ts';
import { DEVICES } from '../../models/onnx/device.ts';
import { resolveCheckpoint } from '../../models/load.ts';
import { modelTypeOf } from '../../models/registry.ts';
import { TrainConfigSchema, readConfigFile, resolveConfig, type TrainConfig } from '../../trainer/config.ts';
import { assertReadsModality, loadTrainingPolicy, train, type TrainEvent } from '../../trainer/loop.ts';
import { loadRewardFunctions } from '../../trainer/reward-functions.ts';
import type { EvalRow } from '../../trainer/metrics.ts';

/** The training config's flags, generated from TrainConfigSchema's descriptions (scripts/schema-flags.ts). */
const CONFIG_FLAGS = schemaFlags(TrainConfigSchema);

const schema = z.object({
  domain: z.string().min(1).optional(),
  modality: z.enum(['text', 'image']).optional(),
  out: z.string().min(1).optional(),
  checkpoint: z.string().min(1).optional(),
  config: z.string().min(1).optional(),
  resume: z.boolean(),
  backend: z.string().min(1).optional(),
  games: z.string().min(1).optional(),
  dataset: z.string().min(1).optional(),
  offset: z.enum(['start', 'random']).optional(),
  quiet: z.boolean(),
  threads: threadsFlag(false),
  device: z.enum(DEVICES, { error: `unknown device; expected one of ${DEVICES.join(', ')}` }).optional(),
  ...flagShape(CONFIG_FLAGS),
});
type TrainFlags = z.infer<typeof schema> & Record<string, unknown>;

/** What config.json records about a run besides the training config (never secrets). */
const RunInfoSchema = z
  .object({
    domain: z.string(),
    modality: z.enum(['text', 'image']),
    checkpoint: z.string(),
    backend: z.string(),
    /** ONNX Runtime's execution provider and intra-op threads (null: every core), with engine 'ort'. */
    ort: z.object({ device: z.enum(DEVICES), threads: z.number().int().positive().nullable() }).optional(),
    envExtra: z.record(z.string(), z.unknown()),
    /** The --dataset path (absolute), when the run trains on one. */
    dataset: z.string().optional(),
    config: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
  })
  .loose();

/** Settings a --resume may change: --steps extends a run, --reward-timeout lets a run a slow reward stopped go on. */
const RESUME_MAY_CHANGE = new Set(['steps', 'rewardTimeout']);

/**
 * Throw a UserError naming the first flag whose value differs from what `info` recorded ("--seed 2, but the run was
 * started with 1"); flags equal to the recorded values, and --steps, pass.
 */
function refuseChanges(flags: TrainFlags, flagConfig: Record<string, unknown>, info: z.infer<typeof RunInfoSchema>, infoPath: string): void {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const refuse = (flag: string, given: unknown, recorded: unknown) => {
    const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v) ?? 'unset');
    throw new UserError(`--resume: --${flag} ${show(given)} differs from the run's ${show(recorded)} (${infoPath}); only --steps may change (and --reward-timeout)`);
  };
  if (flags.domain !== undefined && flags.domain !== info.domain) refuse('domain', flags.domain, info.domain);
  if (flags.modality !== undefined && flags.modality !== info.modality) refuse('modality', flags.modality, info.modality);
  if (flags.checkpoint !== undefined && resolve(flags.checkpoint) !== info.checkpoint) refuse('checkpoint', resolve(flags.checkpoint), info.checkpoint);
  if (flags.games !== undefined && resolve(flags.games) !== info.envExtra.games) refuse('games', resolve(flags.games), info.envExtra.games);
  if (flags.offset !== undefined && flags.offset !== info.envExtra.offset) refuse('offset', flags.offset, info.envExtra.offset);
  // A --config file counts through the values it gives (flags win over it, as when the run was started).
  const given = { ...(flags.config ? readConfigFile(flags.config) : {}), ...flagConfig };
  for (const [key, value] of Object.entries(given)) {
    if (RESUME_MAY_CHANGE.has(key) || same(value, info.config[key])) continue;
    const flag = CONFIG_FLAGS.find((f) => f.key === key)?.flag ?? key;
    refuse(Object.hasOwn(flagConfig, key) ? flag : `config ${flags.config}: ${key}`, value, info.config[key]);
  }
}

function timestamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

async function run(flags: TrainFlags): Promise<void> {
  const log = (line: string) => process.stderr.write(line + '\n');
  let domain: string;
  let modality: 'text' | 'image';
  let runDir: string;
  let config: TrainConfig;
  let checkpointDir: string;
  let envExtra: Record<string, unknown>;
  let datasetPath: string | undefined;
  let dataset: Dataset | undefined;
  const flagConfig = valuesFromFlags(CONFIG_FLAGS, flags);

  if (flags.resume) {
    if (!flags.out) throw new UserError('--resume needs --out RUN_DIR (the run to continue)');
    runDir = resolve(flags.out);
    const infoPath = join(runDir, 'config.json');
    if (!existsSync(infoPath)) throw new UserError(`--resume: ${runDir} holds no run (config.json is missing)`);
    const info = readJson(infoPath, RunInfoSchema, { invalid: (error) => `not a training run's config (${error.issues[0]?.path.join('.')}: ${error.issues[0]?.message})` });
    // Runs recorded before the engine was a setting generated with tfjs: they continue on it.
    info.config.engine ??= 'tfjs';
    // The run continues with its own settings; only --steps (to extend it) and --reward-timeout may change. The original command with
    // --resume appended repeats the recorded values, which is fine: only a real change is refused.
    refuseChanges(flags, flagConfig, info, infoPath);
    if (flags.dataset !== undefined && datasetKey(flags.dataset) !== info.dataset) {
      throw new UserError(`--resume: --dataset ${datasetKey(flags.dataset)} differs from the run's ${info.dataset ?? 'unset'} (${infoPath}); only --steps may change (and --reward-timeout)`);
    }
    ({ domain, modality, checkpoint: checkpointDir, envExtra } = info);
    datasetPath = info.dataset;
    const changed = Object.fromEntries([...RESUME_MAY_CHANGE].filter((k) => flagConfig[k] !== undefined).map((k) => [k, flagConfig[k]]));
    config = resolveConfig(info.config, changed, `${infoPath}: config.`);
    if (datasetPath !== undefined) dataset = await loadDataset(datasetPath, domain, config, modality);
  } else {
    config = resolveConfig(flags.config ? readConfigFile(flags.config) : {}, flagConfig, flags.config ? `${flags.config}: ` : '--');
    if (flags.dataset !== undefined) {
      datasetPath = datasetKey(flags.dataset);
      dataset = await loadDataset(flags.dataset, flags.domain, config, flags.modality);
      if (dataset.train.length === 0) throw new UserError(`${dataset.file}: no rows with split "train" to train on (\`metrl generate --split train\` writes them)`);
      if ((flags.games ?? flags.offset) !== undefined) throw new UserError('--dataset: --games and --offset shape generated chess episodes; a dataset brings its own');
    }
    const datasetDomain = dataset?.domain ?? flags.domain;
    if (!datasetDomain) throw new UserError(dataset ? `--dataset ${flags.dataset}: chat rows need --domain (it scores the answers)` : '--domain is required (chess, shell, boxes, mcst, mate or rem)');
    if ((flags.games !== undefined || flags.offset !== undefined) && datasetDomain !== 'chess') throw new UserError('--games and --offset apply to --domain chess');
    if (flags.games !== undefined && !existsSync(flags.games)) throw new UserError(`--games ${flags.games}: no such file`);
    domain = datasetDomain;
    const datasetModality = dataset && (dataset.train.some(showsImage) ? 'image' : 'text');
    if (!(flags.modality ?? datasetModality)) throw new UserError('--modality is required (text or image)');
    modality = flags.modality ?? datasetModality!;
    runDir = resolve(flags.out ?? join('runs', `${domain}-${modality}-${timestamp()}`));
    if (existsSync(join(runDir, 'metrics.jsonl'))) throw new UserError(`${runDir} already holds a run; add --resume to continue it, or choose another --out`);
    checkpointDir = resolve(flags.checkpoint ?? join(CHECKPOINTS_DIR, 'base'));
    if (!flags.checkpoint && !existsSync(checkpointDir)) {
      throw new UserError(`no base checkpoint at ${checkpointDir}: run \`metrl pretrain\` to build it, or pass --checkpoint DIR`);
    }
    envExtra = {};
    if (flags.games !== undefined) envExtra.games = resolve(flags.games);
    if (flags.offset !== undefined) envExtra.offset = flags.offset;
  }

  const env = await getEnv(domain);
  // Every environment trains; one whose actions have a single form (boxes and MCST are text, MATE and REM images)
  // trains in that form and has no transfer modality.
  if (env.modalities && !env.modalities.includes(modality)) {
    throw new UserError(`--modality ${modality}: ${env.domain} shows its actions as ${env.modalities.join(' or ')} only`);
  }
  // Reward modules load before anything is written: a missing file or a module without a function is one line.
  const rewards = await loadRewardFunctions(config.reward, process.cwd(), config.rewardTimeout);
  // The engine fits the model: ONNX Runtime runs the built-in model and the Hugging Face decoders it has a graph for
  // (unnamed, the engine is the model's default: models/engine.ts); --threads and --device set ONNX Runtime and need it. config.json records the engine chosen.
  const ort = { threads: flags.threads, device: flags.device };
  const modelType = modelTypeOf(existsSync(join(checkpointDir, 'adapter_config.json')) ? resolveCheckpoint(checkpointDir).base : checkpointDir);
  config = { ...config, engine: chooseEngine(config.engine, modelType, ort) };
  const backend = await initBackend(flags.backend, null);
  const setup = await loadTrainingPolicy(checkpointDir, config);
  assertReadsModality(setup.policy, modality);
  // Once the run has started (the checkpoint loaded, the episodes made, a resumed state read), and not before: an error
  // up to there is then the only line on stderr and leaves nothing on disk. config.json comes before the first
  // checkpoint, so that an interrupted run can always be resumed.
  const started = (engineLine: string, learner: string) => {
    if (!flags.resume) {
      writeJsonAtomic(join(runDir, 'config.json'), {
        domain,
        modality,
        checkpoint: checkpointDir,
        backend: backend.name,
        ...(config.engine === 'ort' ? { ort: { device: flags.device ?? 'cpu', threads: flags.threads ?? null } } : {}),
        envExtra,
        ...(datasetPath !== undefined ? { dataset: datasetPath } : {}),
        config,
        createdAt: new Date().toISOString(),
      });
    }
    if (!flags.quiet) {
      log(backendLine(backend));
      if (config.engine === 'ort') log(`inference engine: ${engineLine} (the learner: ${learner})`);
      log(`run folder: ${runDir} (Ctrl-C stops it at any moment; --resume --out ${runDir} continues it)`);
    }
  };
  const progress = flags.quiet ? null : progressView(config, modality, log);
  // Where the run stands, for the Ctrl-C message: the last finished step and the last checkpoint written.
  let lastStep = 0;
  let lastCheckpoint: string | null = null;
  const onEvent = (event: TrainEvent) => {
    if (event.kind === 'start') {
      lastStep = event.fromStep;
      started(event.engine, event.learner);
    }
    if (event.kind === 'step') lastStep = event.row.step;
    if (event.kind === 'checkpoint') lastCheckpoint = `step-${event.step}`;
    progress?.onEvent(event);
  };
  // Every file of a run is written atomically or repaired on resume, so stopping between two of the loop's phases loses
  // nothing finished: say where the run stands and how to continue, and exit 130 as a shell expects after Ctrl-C.
  const onSignal = (signal: string) => {
    progress?.stop();
    const where = lastCheckpoint ? `its last checkpoint is ${lastCheckpoint}` : 'no checkpoint was written yet';
    log(`train: ${signal === 'SIGINT' ? 'interrupted' : signal} after step ${lastStep} of ${config.steps}; ${where}, and finished evaluations are kept. Continue with: metrl train --resume --out ${runDir}`);
    process.exit(130);
  };
  const onSigint = () => onSignal('SIGINT');
  const onSigterm = () => onSignal('SIGTERM');
  process.once('SIGINT', onSigint);
  process.once('SIGTERM', onSigterm);
  try {
    await train({ env, ...setup, config, modality, runDir, resume: flags.resume, envExtra, rewards, dataset, onEvent, ort });
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
    progress?.stop();
  }
  if (!flags.quiet) log(`done: ${runDir} (plot it with: metrl plot ${runDir})`);
}

/** How a run records its dataset: an hf:// address as written, a path made absolute. */
function datasetKey(path: string): string {
  return isHubAddress(path) ? path : resolve(path);
}

/**
 * A --dataset: an official MET-Bench set (parquet shards or hf://: its train split, trajectories cut to --actions, the
 * test selection capped at --test-size, all shown in the trained modality) or a folder / chat rows
 * (envs/dataset-reader.ts).
 */
async function loadDataset(path: string, domain: string | undefined, config: TrainConfig, modality: 'text' | 'image' | undefined): Promise<Dataset> {
  if (!isHubAddress(path) && !isParquetDataset(path)) return readDataset(path, domain);
  const dataset = await readOfficialTrainingSet(path, { actions: config.actions, testLimit: Math.min(config.testSize, OFFICIAL_LIMIT) });
  if (dataset.domain === 'minecraft' && modality === 'image') {
    throw new UserError(`--dataset ${path}: the built-in model reads Minecraft's JSON states (--modality text); its screenshots reach chat models only (metrl evaluate)`);
  }
  const shown = modality ?? 'text';
  return { ...dataset, train: dataset.train.map((i) => ({ episode: withModality(i.episode, shown) })), test: dataset.test.map((i) => ({ episode: withModality(i.episode, shown) })) };
}

/** Does a dataset row show an image (an image action, or an image part in its messages)? */
function showsImage({ episode, messages }: Dataset['train'][number]): boolean {
  if (messages) return messages.some((m) => typeof m.content !== 'string' && m.content.some((p) => p.type === 'image_url'));
  return episode.actions.some((a) => a.modality === 'image');
}

const fmt = (x: number | null | undefined, digits = 3) => (x === null || x === undefined ? '–' : x.toFixed(digits));
const evalText = (r: EvalRow) => `${r.modality} (${r.role === 'train' ? 'trained' : 'transfer'}) ${fmt(r.accuracy)} [${fmt(r.low)}, ${fmt(r.high)}]`;

/** "3h05m", "12m30s", "45s"; "–" when unknown. */
function duration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '–';
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/**
 * Progress on stderr: on a terminal one bar that counts training steps, and during an evaluation (step 0 and every
 * evalEvery steps) the evaluation's items, with the run's ETA counting both the remaining steps and the remaining
 * evaluations; the last checkpoint is shown in the bar. Plain lines otherwise (an evaluation line at most every 10 s).
 */
function progressView(config: TrainConfig, modality: string, log: (line: string) => void) {
  const tty = process.stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        { format: '{phase} {bar} {value}/{total} ETA {eta_formatted} | reward {reward} | valid {valid} | test {test} | {sps}s/step | {ckpt} | run ETA {runEta}', hideCursor: true, stream: process.stderr },
        cliProgress.Presets.shades_classic,
      )
    : null;
  let started = false;
  let payload = { phase: 'GRPO step', reward: '–', valid: '–', test: '–', sps: '–', ckpt: 'no checkpoint yet', runEta: '–' };
  let step = 0;
  let testEpisodes = 0;
  let modalities = 2;
  const stepSeconds: number[] = [];
  let itemSeconds: number | null = null; // measured during evaluations
  let evalStarted = 0;
  let evalDoneAtStart = 0;
  let lastPlain = 0;

  /** Evaluations still due after `step` (each of `modalities` × testEpisodes items). */
  const evalsAfter = (from: number) => {
    let n = 0;
    for (let s = from + 1; s <= config.steps; s++) if (s % config.evalEvery === 0 || s === config.steps) n++;
    return n;
  };
  const runEta = (evalItemsLeft: number) => {
    const perStep = stepSeconds.length > 0 ? stepSeconds.reduce((a, b) => a + b, 0) / stepSeconds.length : null;
    const perItem = itemSeconds;
    if (perStep === null && config.steps > step) return null;
    if (perItem === null) return null;
    return (config.steps - step) * (perStep ?? 0) + (evalItemsLeft + evalsAfter(step) * modalities * testEpisodes) * perItem;
  };
  let drawnPhase = '';
  const redraw = (value: number, total: number) => {
    if (!bar) return;
    // A new phase (the steps, an evaluation of one modality) gets a bar of its own, so that its ETA is its own; the
    // finished one stays on screen above it.
    if (started && drawnPhase !== payload.phase) {
      bar.stop();
      started = false;
    }
    drawnPhase = payload.phase;
    if (!started) {
      bar.start(total, value, payload);
      started = true;
    } else {
      bar.setTotal(total);
      bar.update(value, payload);
    }
  };

  const onEvent = (event: TrainEvent) => {
    switch (event.kind) {
      case 'start':
        step = event.fromStep;
        testEpisodes = event.testEpisodes;
        modalities = event.evaluatedModalities;
        if (event.fromStep >= event.steps) {
          log(`the run is complete at step ${event.fromStep}; pass a larger --steps with --resume to continue it`);
          break;
        }
        log(`training ${modality} on ${event.trainEpisodes} episodes, testing on ${event.testEpisodes} in ${event.evaluatedModalities} modalities; steps ${event.fromStep + 1}-${event.steps}; completions up to ${event.maxCompletionTokens} tokens`);
        break;
      case 'eval-progress': {
        const now = performance.now();
        if (event.done === 0) {
          evalStarted = now;
          evalDoneAtStart = 0;
        } else if (now > evalStarted) itemSeconds = (now - evalStarted) / 1000 / (event.done - evalDoneAtStart);
        const left = event.total - event.done;
        const itemsLeft = left + (event.role === 'train' && modalities > 1 ? testEpisodes : 0);
        payload = { ...payload, phase: `eval step ${event.step}, ${event.modality} (${event.role === 'train' ? 'trained' : 'transfer'}) items`, runEta: duration(runEta(itemsLeft)) };
        if (bar) redraw(event.done, event.total);
        else if (event.done === event.total || now - lastPlain > 10_000) {
          lastPlain = now;
          log(`eval step ${event.step} ${event.modality}: ${event.done}/${event.total} items, run ETA ${payload.runEta}`);
        }
        break;
      }
      case 'step': {
        const r = event.row;
        step = r.step;
        stepSeconds.push(r.time.total);
        if (stepSeconds.length > 20) stepSeconds.shift();
        payload = { ...payload, phase: 'GRPO step', reward: fmt(r.rewardMean, 2), valid: fmt(r.validRate, 2), sps: fmt(r.time.total, 1), runEta: duration(runEta(0)) };
        if (bar) redraw(r.step, config.steps);
        else log(`step ${r.step}/${config.steps} reward ${fmt(r.rewardMean)} ± ${fmt(r.rewardStd)} valid ${fmt(r.validRate, 2)} kl ${fmt(r.kl, 4)} clip ${fmt(r.clipFraction, 3)} len ${fmt(r.completionLength, 1)} zero-spread ${r.zeroSpreadGroups}/${r.groups} ${fmt(r.time.total, 1)}s, run ETA ${payload.runEta}`);
        break;
      }
      case 'eval': {
        const trained = event.rows.find((r) => r.role === 'train');
        payload = { ...payload, phase: 'GRPO step', test: trained ? fmt(trained.accuracy, 2) : payload.test };
        const line = `eval step ${event.rows[0]?.step}: ${event.rows.map(evalText).join('; ')}`;
        if (bar && started) {
          // The result line goes above the bar, which then counts steps again.
          bar.stop();
          started = false;
          log(line);
          if (step < config.steps) redraw(step, config.steps);
        } else log(line);
        break;
      }
      case 'baseline':
        if (bar && started) {
          bar.stop();
          started = false;
        }
        log(`Game Start baseline on the test split (answer = initial state): ${fmt(event.row.accuracy)} [${fmt(event.row.low)}, ${fmt(event.row.high)}] (n = ${event.row.n})`);
        break;
      case 'nan':
        log(`step ${event.step}: loss not finite, update skipped (${event.streak} in a row)`);
        break;
      case 'checkpoint':
        payload = { ...payload, ckpt: `checkpoint step-${event.step}` };
        if (bar && started) bar.update(payload);
        if (!bar) log(`checkpoint: ${event.dir}`);
        break;
    }
  };
  return { onEvent, stop: () => bar?.stop() };
}

const configFlagOptions = flagOptions(CONFIG_FLAGS, 'Training config (also settable in --config FILE):');

const command: CommandModule = {
  command: 'train',
  describe: 'GRPO-train the built-in policy on any environment (text or image actions), tracking the transfer modality',
  builder: (y) =>
    y
      .option('domain', { type: 'string', describe: 'chess | shell | boxes | mcst | mate | rem (with --dataset: the folder\'s or MET-Bench set\'s, or the one that scores chat rows)' })
      .option('modality', { type: 'string', describe: 'text | image: the modality trained on (the other is evaluated as transfer; with --dataset: what its rows show)' })
      .option('out', { type: 'string', describe: 'run folder (default runs/<domain>-<modality>-<timestamp>)' })
      .option('checkpoint', { type: 'string', describe: 'base checkpoint folder (default checkpoints/base)' })
      .option('config', { type: 'string', describe: 'JSON file of training config fields (flags override it)' })
      .option('resume', { type: 'boolean', default: false, describe: 'continue the run in --out from its latest checkpoint' })
      .option('backend', { type: 'string', describe: 'tfjs backend: node-gpu | node | wasm | cpu (default: the fastest that loads)' })
      .option('games', { type: 'string', describe: 'chess: PGN or UCI games file (default: the built-in generator)' })
      .option('offset', { type: 'string', describe: 'chess: start | random ply offset into each game' })
      .option('dataset', {
        type: 'string',
        describe: 'train on rows you bring instead of generated episodes: a folder `metrl generate` wrote (metadata.jsonl + images), a JSONL of chat rows {messages, target, split?}, or a MET-Bench set with a train split (parquet shards or hf://owner/name@revision)',
      })
      .option('quiet', { type: 'boolean', default: false, describe: 'no progress output' })
      .option('threads', { type: 'number', describe: 'cores ONNX Runtime uses, with --engine ort: N one-thread sessions for the built-in model on the CPU, else N intra-op threads (default: every core)' })
      .option('device', { type: 'string', describe: `ONNX Runtime execution provider, with --engine ort: ${DEVICES.join(' | ')} (default cpu)` })
      .options(configFlagOptions),
  handler: handler(schema, (flags) => run(flags as TrainFlags)),
};

export default command;
