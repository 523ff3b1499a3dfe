// `metrl train`'s flags mapped to a run's settings: a fresh run's from the flags and --config
// (domain, modality, run folder, base checkpoint, dataset, the training config), a resumed run's from the config.json
// it recorded, which only --steps and --reward-timeout may change.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { valuesFromFlags } from './schema-flags.ts';
import { CONFIG_FLAGS, type TrainFlags } from './train-flags.ts';
import { UserError } from '../core/errors.ts';
import { readJson } from '../core/files.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { readDataset, type Dataset } from '../envs/dataset-reader.ts';
import { withModality } from '../envs/generate.ts';
import { isHubAddress, readOfficialTrainingSet } from '../envs/metbench/hub.ts';
import { isParquetDataset, OFFICIAL_LIMIT } from '../envs/metbench/official.ts';
import { DEVICES } from '../models/onnx/device.ts';
import { readConfigFile, resolveConfig, type TrainConfig } from '../trainer/config.ts';
import { generatedDomains } from '../envs/registry.ts';

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

/**
 * Throw a UserError naming the first flag whose value differs from what `info` recorded ("--seed 2, but the run was
 * started with 1"); flags equal to the recorded values, and --steps, pass.
 */
/** Settings a --resume may change: --steps extends a run, --reward-timeout lets a run a slow reward stopped go on. */
// The rollout servers and their folder are where the run generates, not what it trains: a resume may move them.
const RESUME_MAY_CHANGE = new Set(['steps', 'rewardTimeout', 'rolloutServer', 'rolloutTimeout', 'rolloutAdapterDir']);

function refuseChanges(
  flags: TrainFlags,
  flagConfig: Record<string, unknown>,
  info: z.infer<typeof RunInfoSchema>,
  infoPath: string,
): void {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const refuse = (flag: string, given: unknown, recorded: unknown) => {
    const show = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? 'unset'));
    throw new UserError(
      `--resume: --${flag} ${show(given)} differs from the run's ${show(recorded)} (${infoPath}); only --steps may change (and --reward-timeout)`,
    );
  };
  if (flags.domain !== undefined && flags.domain !== info.domain) refuse('domain', flags.domain, info.domain);
  if (flags.modality !== undefined && flags.modality !== info.modality)
    refuse('modality', flags.modality, info.modality);
  if (flags.checkpoint !== undefined && resolve(flags.checkpoint) !== info.checkpoint)
    refuse('checkpoint', resolve(flags.checkpoint), info.checkpoint);
  if (flags.games !== undefined && resolve(flags.games) !== info.envExtra.games)
    refuse('games', resolve(flags.games), info.envExtra.games);
  if (flags.offset !== undefined && flags.offset !== info.envExtra.offset)
    refuse('offset', flags.offset, info.envExtra.offset);
  const parsing = flags['chess-answer'];
  if (parsing !== undefined && parsing !== (info.envExtra['chess-answer'] ?? 'reference'))
    refuse('chess-answer', parsing, info.envExtra['chess-answer'] ?? 'reference');
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

/** What a run is: fixed when it starts, read back from its config.json when it is resumed. */
export interface RunSettings {
  domain: string;
  modality: 'text' | 'image';
  runDir: string;
  config: TrainConfig;
  checkpointDir: string;
  envExtra: Record<string, unknown>;
  /** The --dataset as config.json records it (datasetKey). */
  datasetPath: string | undefined;
  dataset: Dataset | undefined;
}

/** The run's settings from the flags: a fresh run's, or (--resume) the recorded ones, refusing any change but --steps. */
export async function runSettings(flags: TrainFlags): Promise<RunSettings> {
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
    const info = readJson(infoPath, RunInfoSchema, {
      invalid: (error) =>
        `not a training run's config (${error.issues[0]?.path.join('.')}: ${error.issues[0]?.message})`,
    });
    // Runs recorded before the engine was a setting generated with tfjs: they continue on it.
    info.config.engine ??= 'tfjs';
    // The run continues with its own settings; only --steps (to extend it) and --reward-timeout may change. The original command with
    // --resume appended repeats the recorded values, which is fine: only a real change is refused.
    refuseChanges(flags, flagConfig, info, infoPath);
    if (flags.dataset !== undefined && datasetKey(flags.dataset) !== info.dataset) {
      throw new UserError(
        `--resume: --dataset ${datasetKey(flags.dataset)} differs from the run's ${info.dataset ?? 'unset'} (${infoPath}); only --steps may change (and --reward-timeout)`,
      );
    }
    ({ domain, modality, checkpoint: checkpointDir, envExtra } = info);
    datasetPath = info.dataset;
    const changed = Object.fromEntries(
      [...RESUME_MAY_CHANGE].filter((k) => flagConfig[k] !== undefined).map((k) => [k, flagConfig[k]]),
    );
    config = resolveConfig(info.config, changed, `${infoPath}: config.`);
    if (datasetPath !== undefined) dataset = await loadDataset(datasetPath, domain, config, modality);
  } else {
    const flagOf = (key: string) => CONFIG_FLAGS.find((f) => f.key === key)?.flag ?? key;
    config = resolveConfig(
      flags.config ? readConfigFile(flags.config) : {},
      flagConfig,
      flags.config ? `${flags.config}: ` : '--',
      flags.config ? (key) => `--${flagOf(key)}` : flagOf,
    );
    if (flags.dataset !== undefined) {
      datasetPath = datasetKey(flags.dataset);
      dataset = await loadDataset(flags.dataset, flags.domain, config, flags.modality);
      if (dataset.train.length === 0)
        throw new UserError(
          `${dataset.file}: no rows with split "train" to train on (\`metrl generate --split train\` writes them)`,
        );
      if ((flags.games ?? flags.offset) !== undefined)
        throw new UserError('--dataset: --games and --offset shape generated chess episodes; a dataset brings its own');
      if (flags['chess-answer'] !== undefined)
        throw new UserError(
          '--dataset: --chess-answer travels with generated episodes; a dataset brings its own (metrl generate --chess-answer lenient)',
        );
    }
    const datasetDomain = dataset?.domain ?? flags.domain;
    if (!datasetDomain)
      throw new UserError(
        dataset
          ? `--dataset ${flags.dataset}: chat rows need --domain (it scores the answers)`
          : `--domain is required (${generatedDomains().join(', ')})`,
      );
    if ((flags.games !== undefined || flags.offset !== undefined) && datasetDomain !== 'chess')
      throw new UserError('--games and --offset apply to --domain chess');
    if (flags['chess-answer'] !== undefined && datasetDomain !== 'chess')
      throw new UserError('--chess-answer applies to --domain chess');
    if (flags.games !== undefined && !existsSync(flags.games))
      throw new UserError(`--games ${flags.games}: no such file`);
    domain = datasetDomain;
    const datasetModality = dataset && (dataset.train.some(showsImage) ? 'image' : 'text');
    if (!(flags.modality ?? datasetModality)) throw new UserError('--modality is required (text or image)');
    modality = flags.modality ?? datasetModality!;
    runDir = resolve(flags.out ?? join('runs', `${domain}-${modality}-${timestamp()}`));
    if (existsSync(join(runDir, 'metrics.jsonl')))
      throw new UserError(`${runDir} already holds a run; add --resume to continue it, or choose another --out`);
    checkpointDir = resolve(flags.checkpoint ?? join(CHECKPOINTS_DIR, 'base'));
    if (!flags.checkpoint && !existsSync(checkpointDir)) {
      throw new UserError(
        `no base checkpoint at ${checkpointDir}: run \`metrl pretrain\` to build it, or pass --checkpoint DIR`,
      );
    }
    envExtra = {};
    if (flags.games !== undefined) envExtra.games = resolve(flags.games);
    if (flags.offset !== undefined) envExtra.offset = flags.offset;
    // The lenient reward is an opt-in: recorded where the run's settings are, and read by the episodes' scoring.
    if (flags['chess-answer'] === 'lenient') envExtra['chess-answer'] = 'lenient';
  }
  return { domain, modality, runDir, config, checkpointDir, envExtra, datasetPath, dataset };
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
async function loadDataset(
  path: string,
  domain: string | undefined,
  config: TrainConfig,
  modality: 'text' | 'image' | undefined,
): Promise<Dataset> {
  if (!isHubAddress(path) && !isParquetDataset(path)) return readDataset(path, domain);
  const dataset = await readOfficialTrainingSet(path, {
    actions: config.actions,
    testLimit: Math.min(config.testSize, OFFICIAL_LIMIT),
  });
  if (dataset.domain === 'minecraft' && modality === 'image') {
    throw new UserError(
      `--dataset ${path}: the built-in model reads Minecraft's JSON states (--modality text); its screenshots reach chat models only (metrl evaluate)`,
    );
  }
  const shown = modality ?? 'text';
  return {
    ...dataset,
    train: dataset.train.map((i) => ({ episode: withModality(i.episode, shown) })),
    test: dataset.test.map((i) => ({ episode: withModality(i.episode, shown) })),
  };
}

/** Does a dataset row show an image (an image action, or an image part in its messages)? */
function showsImage({ episode, messages }: Dataset['train'][number]): boolean {
  if (messages)
    return messages.some((m) => typeof m.content !== 'string' && m.content.some((p) => p.type === 'image_url'));
  return episode.actions.some((a) => a.modality === 'image');
}
