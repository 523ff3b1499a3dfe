// The run: what a training run works on, fixed from its start to its end: the setup a caller gives
// train() (TrainingSetup), the events it reports (TrainEvent), and prepareRun, which turns the setup into the Run every
// phase reads: the inference engine and the learner, the train prompts, the fixed test split in the trained and the
// transfer modality, the completion budget, the log and checkpoint paths.
import { join } from 'node:path';
import type { Env } from '../../envs/env.ts';
import type { Episode, Modality } from '../../core/episode.ts';
import { generateEpisodes, withModality } from '../../envs/generate.ts';
import type { Dataset, DatasetItem } from '../../envs/dataset-reader.ts';
import type { Policy } from '../../models/policy.ts';
import type { Sampler } from '../../models/sampler.ts';
import type { Learner } from '../../models/learner.ts';
import { openEngine, openOrtLearner, type EngineSampler, type OrtRuntime } from '../../models/engine.ts';
import { remoteEngine } from '../../models/remote/remote-engine.ts';
import { preflightRolloutServers } from '../../models/remote/preflight.ts';
import { UserError } from '../../core/errors.ts';
import { entropyBonusEnabled } from '../loss/entropy-control.ts';
import { staleRolloutLimit, type TrainConfig } from '../config.ts';
import type { RewardFunction } from './reward-functions.ts';
import { completionBudget, type PreparedEpisode } from '../periodic-eval.ts';
import { learnerAdapterStore, type AdapterStore } from '../logs/checkpoint.ts';
import type { BaselineRow, EvalRow, TrainRow } from '../logs/metrics.ts';

export interface TrainingSetup {
  env: Env;
  /**
   * The model trained: its Sampler side generates and gives the no-grad log-probs, its Learner side is updated (the
   * same object today), with the fresh LoRA adapters the run trains attached (loadTrainingPolicy).
   */
  policy: Policy;
  /** The base checkpoint folder the run starts from, named in every saved adapter (base_model_name_or_path). */
  baseModel: string;
  config: TrainConfig;
  /** The modality trained on; the other one is tracked as the transfer modality. */
  modality: Modality;
  /** Run folder: metrics.jsonl, samples.jsonl and checkpoints/ go here. */
  runDir: string;
  /** Continue from the newest checkpoint in runDir/checkpoints. */
  resume: boolean;
  /** Environment options for the episode generator (e.g. chess games file). */
  envExtra?: Record<string, unknown>;
  onEvent?(event: TrainEvent): void;
  /** Stop cleanly after this step (tests simulate an interruption with it). */
  stopAfterStep?: number;
  /**
   * Rows a user brought (--dataset, envs/dataset-reader.ts) instead of generated episodes: every train row is trained
   * on (trainSize does not apply) and every test row evaluated; an image folder without test rows is tested on the
   * domain's generated test split (testSize, testSeed, actions), chat rows without test rows are not evaluated.
   */
  dataset?: Dataset;
  /** config.reward already loaded (the CLI loads them before writing the run folder); loaded by train() otherwise. */
  rewards?: RewardFunction[];
  /** ONNX Runtime's threads and device, with config.engine 'ort' (models/engine.ts). */
  ort?: OrtRuntime;
}

export type TrainEvent =
  /** `engine` describes the inference engine ("tfjs", "ONNX Runtime 1.30.0 (cpu, 2 threads)"), `learner` what computes the gradients. */
  | {
      kind: 'start';
      fromStep: number;
      steps: number;
      trainEpisodes: number;
      testEpisodes: number;
      maxCompletionTokens: number;
      evaluatedModalities: number;
      engine: string;
      learner: 'ONNX Runtime' | 'tfjs';
    }
  | { kind: 'step'; row: TrainRow }
  | { kind: 'eval'; rows: EvalRow[] }
  /** During an evaluation: items of `modality` answered so far at `step`. */
  | { kind: 'eval-progress'; step: number; modality: Modality; role: 'train' | 'transfer'; done: number; total: number }
  | { kind: 'baseline'; row: BaselineRow }
  | { kind: 'checkpoint'; dir: string; step: number }
  /** The learner's sessions opened before the first step of this process (`seconds` of it, outside every step's time). */
  | { kind: 'learner-open'; seconds: number }
  | { kind: 'nan'; step: number; streak: number };

export interface TrainingResult {
  lastStep: number;
  evals: EvalRow[];
}

interface TestSet {
  modality: Modality;
  role: 'train' | 'transfer';
  items: PreparedEpisode[];
}

/** What a run works on, fixed from its start to its end. */
export interface Run {
  setup: TrainingSetup;
  env: Env;
  config: TrainConfig;
  sampler: Sampler;
  learner: Learner;
  /** The engine behind `sampler`: its adapters are synced from the learner after every change (syncLora). */
  engine: EngineSampler;
  adapter: AdapterStore;
  metricsPath: string;
  samplesPath: string;
  checkpointsDir: string;
  trainSet: PreparedEpisode[];
  testEpisodes: Episode[];
  testSets: TestSet[];
  maxCompletionTokens: number;
  /** The rewards of config.reward, loaded before step 1 so that a bad module stops the run before any work. */
  rewards: RewardFunction[];
  /** Log Game Start on the test split: episodes with an initial state (not chat rows) and a test split. */
  baseline: boolean;
}

/** Without a reference length (no episodes), a budget that fits a FEN answer with room to spare. */
const FALLBACK_COMPLETION_TOKENS = 128;

const otherModality = (m: Modality): Modality => (m === 'text' ? 'image' : 'text');

/** A text-only model (imageSize 0) cannot be trained on image actions: say so before anything is written. */
export function assertReadsModality(sampler: Sampler, modality: Modality): void {
  if (modality === 'image' && sampler.imageSize === 0)
    throw new UserError('the model reads text only and cannot train on image actions: use --modality text');
}

/**
 * Every prompt leaves room for the completion budget in the model's context: one line naming the first that does not
 * (a --dataset row by file:line), before anything is written, instead of a failure at its first rollout.
 */
function assertPromptsFit(
  items: PreparedEpisode[],
  budget: number,
  context: number,
  dataset: TrainingSetup['dataset'],
): void {
  const lines = new Map((dataset ? [...dataset.train, ...dataset.test] : []).map((item) => [item.episode, item.line]));
  for (const { episode, prompt } of items) {
    if (prompt.tokens.length + budget <= context) continue;
    const line = lines.get(episode);
    const where = dataset && line !== undefined ? `${dataset.file}:${line}` : `episode ${episode.id}`;
    throw new UserError(
      `${where}: its prompt of ${prompt.tokens.length} tokens and the completion budget of ${budget} exceed the model's context of ${context} tokens`,
    );
  }
}

/**
 * The run's data: train episodes and prompts, the fixed test split in both modalities, the completion budget. The
 * episodes are generated from the seeds, or read from a dataset (--dataset).
 */
export async function prepareRun(setup: TrainingSetup, rewards: RewardFunction[]): Promise<Run> {
  const { policy, config, modality, runDir, dataset } = setup;
  assertReadsModality(policy, modality);
  // Rollout servers are checked before anything else is done or written: a dead or misconfigured one costs seconds.
  if (config.rolloutServer)
    await preflightRolloutServers({
      urls: config.rolloutServer,
      api: config.rolloutApi,
      vocabSize: policy.vocabSize,
      probe: policy.encode([{ type: 'text', text: 'shell\n1\n' }]).tokens,
      ...(config.rolloutAdapterDir !== undefined ? { adapterDir: config.rolloutAdapterDir } : {}),
    });
  // One engine for both sides. tfjs: the policy samples and learns. ort: an ONNX Runtime session samples (reading the
  // policy's adapters after each update) and ONNX Runtime computes the LoRA gradients (models/engine.ts openOrtLearner);
  // the tfjs variables stay what AdamW updates and what checkpoints save.
  const local = await openEngine(policy, config.engine, setup.ort);
  const learner: Learner = local.ortLearner
    ? await openOrtLearner(policy, { threads: setup.ort?.threads, device: setup.ort?.device })
    : policy;
  // With --rollout-server the rollouts go to vLLM / SGLang / metrl serve replicas (TRL's vllm_mode="server"); the
  // learner, the reference and old log-probs and the evaluation stay on the local engine.
  const engine = config.rolloutServer
    ? remoteEngine(local, {
        urls: config.rolloutServer,
        api: config.rolloutApi,
        timeoutSeconds: config.rolloutTimeout,
        adapterDir: config.rolloutAdapterDir ?? join(runDir, 'rollout-adapters'),
        saveAdapter: (dir) => learner.saveAdapter(dir, { baseModel: setup.baseModel }),
        vocabSize: policy.vocabSize,
        // --async: the replicas' client beside the learner, and the adapters of the rounds ahead kept for checkpoints.
        background: config.async,
        keepVersions: staleRolloutLimit(config) + 2,
      })
    : local;
  // The ONNX Runtime learners differentiate the loss with respect to the log-probabilities only (the entropies reach the
  // loss as constants), so an entropy bonus would train nothing there: refused, before anything is written.
  if (local.ortLearner && entropyBonusEnabled(config)) {
    local.dispose();
    throw new UserError(
      '--entropy-coef / --use-adaptive-entropy: the ONNX Runtime learner does not differentiate the entropy; add --engine tfjs',
    );
  }
  const sampler: Sampler = engine.sampler;
  // Chat rows are prompted with their own messages, which the model's chatPrompt ends with the answer cue: the
  // completion is the answer alone, never the domain's trace layout.
  const env: Env =
    dataset?.format === 'chat' ? { ...setup.env, traceStates: undefined, traceStart: undefined } : setup.env;
  const prepare = (episodes: Episode[]): PreparedEpisode[] =>
    episodes.map((episode) => ({ episode, prompt: sampler.prompt(env, episode) }));
  const prepareRows = async (items: DatasetItem[]): Promise<PreparedEpisode[]> => {
    const out: PreparedEpisode[] = [];
    for (const { episode, messages } of items)
      out.push({ episode, prompt: messages ? await sampler.chatPrompt(messages) : sampler.prompt(env, episode) });
    return out;
  };
  const trainSet = dataset
    ? await prepareRows(dataset.train)
    : prepare(
        generateEpisodes(env, {
          n: config.trainSize,
          actions: config.actions,
          split: 'train',
          seed: config.seed,
          modality,
          extra: setup.envExtra,
        }),
      );
  // A folder `metrl generate` wrote holds one split: without test rows, the domain's test split is generated as usual.
  const testEpisodes =
    dataset && (dataset.test.length > 0 || dataset.format === 'chat')
      ? dataset.test.map((i) => i.episode)
      : generateEpisodes(env, {
          n: config.testSize,
          actions: config.actions,
          split: 'test',
          seed: config.testSeed,
          modality,
          extra: setup.envExtra,
        });
  const transfer = otherModality(modality);
  const testSets: TestSet[] = [];
  if (dataset?.format === 'chat') {
    // Free-form messages cannot be shown in the other modality: the trained one only.
    if (dataset.test.length > 0) testSets.push({ modality, role: 'train', items: await prepareRows(dataset.test) });
  } else if (testEpisodes.length > 0) {
    testSets.push({ modality, role: 'train', items: prepare(testEpisodes.map((e) => withModality(e, modality))) });
    // Environments whose actions have one form only (boxes, MCST: text; MATE, REM: images) have no transfer modality,
    // and a text-only model (imageSize 0) none in images.
    if ((!env.modalities || env.modalities.includes(transfer)) && (transfer === 'text' || sampler.imageSize > 0)) {
      testSets.push({
        modality: transfer,
        role: 'transfer',
        items: prepare(testEpisodes.map((e) => withModality(e, transfer))),
      });
    }
  }
  // The completion budget fitted to the task: room for the longest reference completion, with a quarter to spare.
  const referenceEpisodes = [...trainSet.map((p) => p.episode), ...testEpisodes];
  const fitted = () =>
    referenceEpisodes.length === 0
      ? FALLBACK_COMPLETION_TOKENS
      : completionBudget(referenceEpisodes.map((e) => sampler.referenceTokens(env, e)));
  const maxCompletionTokens = config.maxCompletionTokens ?? fitted();
  assertPromptsFit(
    [...trainSet, ...testSets.flatMap((t) => t.items)],
    maxCompletionTokens,
    sampler.contextLimit,
    dataset,
  );
  return {
    setup,
    env,
    config,
    sampler,
    learner,
    engine,
    adapter: learnerAdapterStore(learner, setup.baseModel, { r: config.loraRank, alpha: config.loraAlpha }),
    metricsPath: join(runDir, 'metrics.jsonl'),
    samplesPath: join(runDir, 'samples.jsonl'),
    checkpointsDir: join(runDir, 'checkpoints'),
    trainSet,
    testEpisodes,
    testSets,
    maxCompletionTokens,
    rewards,
    baseline: testEpisodes.length > 0 && dataset?.format !== 'chat',
  };
}
