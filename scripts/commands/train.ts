// `metrl train`: GRPO on the built-in policy for one domain and modality, on generated episodes or on a dataset
// (--dataset: envs/dataset-reader.ts). Wiring only: flags and the config file are
// validated here (trainer/config.ts), the run folder is laid out, progress is shown; the work lives in trainer/.
//   RUN_DIR/config.json    domain, modality, base checkpoint, tfjs backend, the full training config
//   RUN_DIR/metrics.jsonl  one row per step (type "train") and per evaluation (type "eval", with its modality)
//   RUN_DIR/samples.jsonl  sample completions with their rewards
//   RUN_DIR/checkpoints/   step-N/ (PEFT adapter, optimizer and RNG state) and `latest`
import type { CommandModule } from 'yargs';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import cliProgress from 'cli-progress';
import { handler } from '../command.ts';
import { flagOptions, flagShape, schemaFlags, valuesFromFlags } from '../schema-flags.ts';
import { UserError } from '../../core/errors.ts';
import { readJson, writeJsonAtomic } from '../../core/files.ts';
import { CHECKPOINTS_DIR } from '../../core/paths.ts';
import { getEnv } from '../../envs/registry.ts';
import { readDataset, type Dataset } from '../../envs/dataset-reader.ts';
import { initBackend } from '../../models/backend.ts';
import { TrainConfigSchema, readConfigFile, resolveConfig, type TrainConfig } from '../../trainer/config.ts';
import { loadTrainingPolicy, train, type TrainEvent } from '../../trainer/loop.ts';
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
    envExtra: z.record(z.string(), z.unknown()),
    /** The --dataset path (absolute), when the run trains on one. */
    dataset: z.string().optional(),
    config: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
  })
  .loose();

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
    // The run continues with its own settings; only --steps may change (to extend it).
    const changed = Object.keys(flagConfig).filter((k) => k !== 'steps');
    const other = (['domain', 'modality', 'checkpoint', 'config', 'games', 'offset', 'dataset'] as const).filter((k) => flags[k] !== undefined && !(k === 'domain' && flags.domain === info.domain) && !(k === 'modality' && flags.modality === info.modality));
    if (changed.length > 0 || other.length > 0) {
      throw new UserError(`--resume continues with ${infoPath}; drop --${[...other, ...changed].join(', --')} (only --steps may change)`);
    }
    ({ domain, modality, checkpoint: checkpointDir, envExtra } = info);
    datasetPath = info.dataset;
    if (datasetPath !== undefined) dataset = readDataset(datasetPath, domain);
    config = resolveConfig(info.config, flags.steps !== undefined ? { steps: flags.steps } : {}, `${infoPath}: config.`);
  } else {
    if (flags.dataset !== undefined) {
      datasetPath = resolve(flags.dataset);
      dataset = readDataset(flags.dataset, flags.domain);
      if (dataset.train.length === 0) throw new UserError(`${dataset.file}: no rows with split "train" to train on (\`metrl generate --split train\` writes them)`);
      if ((flags.games ?? flags.offset) !== undefined) throw new UserError('--dataset: --games and --offset shape generated chess episodes; a dataset brings its own');
    }
    const datasetDomain = dataset?.domain ?? flags.domain;
    if (!datasetDomain) throw new UserError(dataset ? `--dataset ${flags.dataset}: chat rows need --domain (it scores the answers)` : '--domain is required (chess, shell, boxes, mcst, mate or rem)');
    domain = datasetDomain;
    const datasetModality = dataset && (dataset.train.some(showsImage) ? 'image' : 'text');
    if (!(flags.modality ?? datasetModality)) throw new UserError('--modality is required (text or image)');
    modality = flags.modality ?? datasetModality!;
    config = resolveConfig(flags.config ? readConfigFile(flags.config) : {}, flagConfig, flags.config ? `${flags.config}: ` : '--');
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
  const rewards = await loadRewardFunctions(config.reward);
  const backend = await initBackend(flags.backend, flags.quiet ? null : log);
  const setup = await loadTrainingPolicy(checkpointDir, config);
  if (!flags.resume) {
    // Written before the first step so that an interrupted run can always be resumed.
    writeJsonAtomic(join(runDir, 'config.json'), {
      domain,
      modality,
      checkpoint: checkpointDir,
      backend: backend.name,
      envExtra,
      ...(datasetPath !== undefined ? { dataset: datasetPath } : {}),
      config,
      createdAt: new Date().toISOString(),
    });
  }
  if (!flags.quiet) log(`run folder: ${runDir}`);
  const progress = flags.quiet ? null : progressView(config, modality, log);
  try {
    await train({ env, ...setup, config, modality, runDir, resume: flags.resume, envExtra, rewards, dataset, onEvent: progress?.onEvent });
  } finally {
    progress?.stop();
  }
  if (!flags.quiet) log(`done: ${runDir} (plot it with: metrl plot ${runDir})`);
}

/** Does a dataset row show an image (an image action, or an image part in its messages)? */
function showsImage({ episode, messages }: Dataset['train'][number]): boolean {
  if (messages) return messages.some((m) => typeof m.content !== 'string' && m.content.some((p) => p.type === 'image_url'));
  return episode.actions.some((a) => a.modality === 'image');
}

const fmt = (x: number | null | undefined, digits = 3) => (x === null || x === undefined ? '–' : x.toFixed(digits));
const evalText = (r: EvalRow) => `${r.modality} (${r.role === 'train' ? 'trained' : 'transfer'}) ${fmt(r.accuracy)} [${fmt(r.low)}, ${fmt(r.high)}]`;

/** A progress bar with reward, accuracy and ETA on a terminal; plain lines otherwise. */
function progressView(config: TrainConfig, modality: string, log: (line: string) => void) {
  const tty = process.stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        { format: 'GRPO {bar} {value}/{total} | reward {reward} | valid {valid} | test {test} | {sps}s/step | ETA {eta_formatted}', hideCursor: true, etaBuffer: 20, stream: process.stderr },
        cliProgress.Presets.shades_classic,
      )
    : null;
  let test = '–';
  let started = false;
  // The bar's last values, kept when it is restarted around an evaluation line.
  let payload = { reward: '–', valid: '–', test, sps: '–' };
  const onEvent = (event: TrainEvent) => {
    switch (event.kind) {
      case 'start':
        if (event.fromStep >= event.steps) {
          log(`the run is complete at step ${event.fromStep}; pass a larger --steps with --resume to continue it`);
          break;
        }
        log(`training ${modality} on ${event.trainEpisodes} episodes, testing on ${event.testEpisodes}; steps ${event.fromStep + 1}-${event.steps}; completions up to ${event.maxCompletionTokens} tokens`);
        if (bar) {
          bar.start(event.steps, event.fromStep, payload);
          started = true;
        }
        break;
      case 'step': {
        const r = event.row;
        payload = { reward: fmt(r.rewardMean, 2), valid: fmt(r.validRate, 2), test, sps: fmt(r.time.total, 1) };
        if (bar) bar.update(r.step, payload);
        else log(`step ${r.step}/${config.steps} reward ${fmt(r.rewardMean)} ± ${fmt(r.rewardStd)} valid ${fmt(r.validRate, 2)} kl ${fmt(r.kl, 4)} clip ${fmt(r.clipFraction, 3)} len ${fmt(r.completionLength, 1)} zero-spread ${r.zeroSpreadGroups}/${r.groups} ${fmt(r.time.total, 1)}s`);
        break;
      }
      case 'eval': {
        const trained = event.rows.find((r) => r.role === 'train');
        test = trained ? fmt(trained.accuracy, 2) : test;
        payload = { ...payload, test };
        const line = `eval step ${event.rows[0]?.step}: ${event.rows.map(evalText).join('; ')}`;
        if (bar && started) {
          bar.stop();
          log(line);
          if ((event.rows[0]?.step ?? 0) < config.steps) bar.start(config.steps, event.rows[0]?.step ?? 0, payload);
          else started = false;
        } else log(line);
        break;
      }
      case 'baseline':
        // Logged before the bar starts its step-0 evaluation; the bar is restarted around eval lines anyway.
        if (bar && started) bar.stop();
        log(`Game Start baseline on the test split (answer = initial state): ${fmt(event.row.accuracy)} [${fmt(event.row.low)}, ${fmt(event.row.high)}] (n = ${event.row.n})`);
        if (bar && started) bar.start(config.steps, 0, payload);
        break;
      case 'nan':
        log(`step ${event.step}: loss not finite, update skipped (${event.streak} in a row)`);
        break;
      case 'checkpoint':
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
      .option('domain', { type: 'string', describe: 'chess | shell | boxes | mcst | mate | rem (with --dataset: the folder\'s, or the one that scores chat rows)' })
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
        describe: 'train on rows you bring instead of generated episodes: a folder `metrl generate` wrote (metadata.jsonl + images), or a JSONL of chat rows {messages, target, split?}',
      })
      .option('quiet', { type: 'boolean', default: false, describe: 'no progress output' })
      .options(configFlagOptions),
  handler: handler(schema, (flags) => run(flags as TrainFlags)),
};

export default command;
