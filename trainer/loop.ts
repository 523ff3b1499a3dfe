// The GRPO training loop (trainer/ layer). train() reads as its phases, in the order TRL's GRPOTrainer runs them
// (_generate_and_score_completions → compute_loss → _maybe_log_save_evaluate):
//   startRun                    episodes, prompts, completion budget, the inference engine (config.engine: tfjs,
//                               or ONNX Runtime as the Sampler beside the tfjs Learner); a fresh run or the newest
//                               checkpoint (resume)
//   per step:
//     collectGroups             rounds of generateRollouts (the next prompts in the data order, a group of
//                               completions each; Sampler) and rewardRollouts (the environment's score, then the
//                               reward functions of --reward, weighted); with dynamic sampling, more rounds until the
//                               step holds enough groups with a reward spread; then group-relative advantages
//     referenceAndOldLogProbs   learner chunks with the reference (LoRA off) and old-policy log-probs (Sampler, no grad)
//     updatePolicy              μ passes of the objective (objective.ts: loss type, clipping, masks), gradients summed
//                               over the chunks, one AdamW update per pass (Learner), the Sampler's adapters synced
//     logStep                   metrics.jsonl and samples.jsonl rows, the NaN streak
//     evaluate, saveCheckpoint  every K steps: greedy accuracy on a fixed test split in the trained and the transfer
//                               modality; a checkpoint that `resume` continues from, reproducing the uninterrupted run
// The phases share two objects: the Run (fixed for the whole run) and the RunState (what a checkpoint saves).
import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Env } from '../envs/env.ts';
import type { Episode, Modality } from '../core/episode.ts';
import type { Score } from '../core/score.ts';
import { generateEpisodes, withModality } from '../envs/generate.ts';
import type { Dataset, DatasetItem } from '../envs/dataset-reader.ts';
import type { Completion, SamplingOptions, SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from '../models/types.ts';
import type { Policy } from '../models/policy.ts';
import type { Sampler } from '../models/sampler.ts';
import { summedLossGradients, type Learner } from '../models/learner.ts';
import { ortLearner } from '../models/onnx/ort-learner.ts';
import { loadBaseModel } from '../models/registry.ts';
import { openEngine, type EngineSampler, type OrtRuntime } from '../models/engine.ts';
import { resolveCheckpoint } from '../models/load.ts';
import { Rng } from '../core/rng.ts';
import { UserError } from '../core/errors.ts';
import { appendJsonl } from '../core/files.ts';
import type { TrainConfig } from './config.ts';
import { groupAdvantages } from './advantages.ts';
import { clipGradientsByGlobalNorm, grpoLoss } from './loss.ts';
import { addLossSums, emptyLossSums, stepObjective, type StepObjective } from './objective.ts';
import { entropyThreshold, maskedValues } from './entropy-mask.ts';
import { dynamicSamplingRound, startTally, type DynamicSamplingTally } from './dynamic-sampling.ts';
import { computeRewards, loadRewardFunctions, type RewardFunction } from './reward-functions.ts';
import { trlMetrics, type StepLossSums } from './trl-metrics.ts';
import { AdamW } from './adamw.ts';
import { DataOrder } from './data-order.ts';
import { completionBudget, evaluateSplitStepwise, gameStartBaseline, type PreparedEpisode } from './periodic-eval.ts';
import { chunksByCost, chunksWithin } from './chunks.ts';
import { latestCheckpointDir, learnerAdapterStore, readCheckpoint, saveCheckpoint, TRAINER_STATE_VERSION, type AdapterStore, type Checkpoint } from './run-checkpoint.ts';
import { truncateLogAfterStep, type BaselineRow, type EvalRow, type SampleRow, type TrainRow } from './metrics.ts';

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
  | { kind: 'start'; fromStep: number; steps: number; trainEpisodes: number; testEpisodes: number; maxCompletionTokens: number; evaluatedModalities: number; engine: string; learner: 'ONNX Runtime' | 'tfjs' }
  | { kind: 'step'; row: TrainRow }
  | { kind: 'eval'; rows: EvalRow[] }
  /** During an evaluation: items of `modality` answered so far at `step`. */
  | { kind: 'eval-progress'; step: number; modality: Modality; role: 'train' | 'transfer'; done: number; total: number }
  | { kind: 'baseline'; row: BaselineRow }
  | { kind: 'checkpoint'; dir: string; step: number }
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
interface Run {
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

/** What changes from step to step; everything but `evals` is saved in checkpoints. */
interface RunState {
  step: number;
  nanStreak: number;
  /** The rollout sampling RNG. */
  rng: Rng;
  order: DataOrder;
  optimizer: AdamW;
  /** The learner's LoRA variables, in the optimiser's order. */
  variables: tf.Variable[];
  evals: EvalRow[];
  /**
   * Rows already in metrics.jsonl for the step the run starts from ('baseline', 'eval:<modality>'): written before an
   * interruption, they are kept and not computed again.
   */
  logged: Set<string>;
  /** Whether a checkpoint of `step` exists (a resumed run's, or the step-0 one). */
  checkpointed: boolean;
}

/** Phase 1: a group of completions for each prompt of the step. */
interface Rollouts {
  items: PreparedEpisode[];
  groups: Completion[][];
}

/** Phase 2: what the environment and the reward functions made of them. */
interface RewardedRollouts {
  scores: Score[];
  /** The weighted total of the reward functions: what the advantages are computed from. */
  rewards: number[];
  /** Each reward function's own values (rewards/<name>/mean and /std). */
  byName: Record<string, number[]>;
}

/**
 * Phases 1-2 of a step: every group drawn (all rounds of dynamic sampling, in order) and the ones trained on. Without
 * dynamic sampling every drawn group is trained on.
 */
interface StepGroups {
  drawn: Rollouts;
  rewarded: RewardedRollouts;
  /** Indices into drawn.groups of the groups the update uses, in order. */
  trained: number[];
  /** Advantages of the trained groups' completions (group after group). */
  advantages: Float32Array;
  /** Over all drawn groups: those whose rewards are all equal, and how many there were. */
  zeroSpreadGroups: number;
  groupCount: number;
  /** Dynamic sampling's counts; absent when it is off. */
  tally?: DynamicSamplingTally;
  /** Seconds spent generating and rewarding, over all rounds. */
  seconds: { rollout: number; reward: number };
}

/** Phase 3: a learner chunk with its constants (kept tensors, disposed after the update). */
interface LearnerBatch {
  seqs: SequenceBatchItem[];
  adv: Float32Array;
  /** [chunk, maxLen] reference log-probs (LoRA off); null when β = 0 or refIsPolicy. */
  ref: tf.Tensor2D | null;
  /**
   * β > 0 but the adapters are exactly zero with a separate inference engine (EngineSampler.referenceIsPolicy): the
   * reference log-probs are the first gradient pass's own, detached (set into `ref` there), as tfjs's reference pass
   * would give them bit for bit.
   */
  refIsPolicy: boolean;
  /** [chunk, maxLen] old-policy log-probs; null when μ = 1 (taken from the gradient pass itself). */
  old: tf.Tensor2D | null;
  /** Indices of the chunk's completions among the step's trained completions (objective.rows). */
  indices: number[];
}

/** Phase 4: sums over the μ passes, for the step's row. */
interface UpdateStats {
  loss: number;
  tokens: number;
  kl: number;
  clipped: number;
  ratio: number;
  entropy: number;
  entropyTokens: number;
  gradNorm: number;
  updated: boolean;
  /** A pass had a non-finite loss or gradient (counts toward maxNanSteps); false when there was nothing to train on. */
  nonFinite: boolean;
  /** The same sums in TRL's terms (clip ratios low/high/region), for trl-metrics.ts. */
  trl: StepLossSums;
}

/** Without a reference length (no episodes), a budget that fits a FEN answer with room to spare. */
const FALLBACK_COMPLETION_TOKENS = 128;

export const otherModality = (m: Modality): Modality => (m === 'text' ? 'image' : 'text');

/**
 * The base checkpoint in `baseModel` (any architecture in models/registry.ts) with the fresh LoRA adapters a run
 * trains, seeded from the run's seed: the `policy` and `baseModel` of a TrainingSetup.
 */
export async function loadTrainingPolicy(checkpoint: string, config: TrainConfig): Promise<{ policy: Policy; baseModel: string }> {
  // A base folder gets fresh adapters; an adapter folder (PEFT, or a run's checkpoint) is trained on from its weights,
  // on the base it names, which stays the reference policy.
  const where = existsSync(join(checkpoint, 'adapter_config.json')) ? resolveCheckpoint(checkpoint) : { base: checkpoint, adapter: null };
  // ONNX Runtime reads a Hugging Face checkpoint's weights from host arrays (models/registry.ts LoadOptions).
  const policy = await loadBaseModel(where.base, { hostWeights: config.engine === 'ort' });
  if (where.adapter) {
    const loaded = policy.loadAdapter(where.adapter);
    if (loaded.r !== config.loraRank || loaded.alpha !== config.loraAlpha) {
      policy.dispose();
      throw new UserError(`${where.adapter}: adapter has r=${loaded.r}, alpha=${loaded.alpha}; train it with --lora-rank ${loaded.r} --lora-alpha ${loaded.alpha}`);
    }
    return { policy, baseModel: where.base };
  }
  // --lora-targets q,k,v and --lora-targets q k v both work: each value may hold a comma list.
  const targets = config.loraTargets?.flatMap((t) => t.split(',')).map((t) => t.trim()).filter((t) => t !== '');
  policy.attachLora({ r: config.loraRank, alpha: config.loraAlpha, ...(targets ? { targets } : {}) }, new Rng(config.seed, 'lora-init'));
  return { policy, baseModel: where.base };
}

export async function train(setup: TrainingSetup): Promise<TrainingResult> {
  // Reward modules load first: a missing file or a module without a function stops the run before any work.
  const rewards = setup.rewards ?? (await loadRewardFunctions(setup.config.reward, process.cwd(), setup.config.rewardTimeout));
  const run = await prepareRun(setup, rewards);
  try {
    return await trainRun(run);
  } finally {
    run.engine.dispose();
  }
}

async function trainRun(run: Run): Promise<TrainingResult> {
  const { setup } = run;
  const state = startOrResume(run);
  setup.onEvent?.({ kind: 'start', fromStep: state.step, steps: run.config.steps, trainEpisodes: run.trainSet.length, testEpisodes: run.testEpisodes.length, maxCompletionTokens: run.maxCompletionTokens, evaluatedModalities: run.testSets.length, engine: run.engine.describe, learner: run.engine.ortLearner ? 'ONNX Runtime' : 'tfjs' });
  // A run can be stopped at any moment and resumed: the step-0 checkpoint comes first, and the evaluation due at the
  // step the run starts from (step 0, or a checkpoint whose evaluation was interrupted) is finished, skipping the
  // modalities whose rows are already in metrics.jsonl.
  if (!state.checkpointed) checkpoint(run, state);
  if (state.step === 0 && run.baseline && !state.logged.has('baseline')) logBaseline(run);
  if (evaluationDue(run, state.step)) await evaluate(run, state, state.step);
  state.logged.clear();
  const { config } = run;
  const stopAt = Math.min(config.steps, setup.stopAfterStep ?? Infinity);
  while (state.step < stopAt) {
    state.step++;
    const tStart = performance.now();
    const step = await collectGroups(run, state);
    const tReward = performance.now();
    const trained = trainedRollouts(step);
    const objective = stepObjective(config, trained.groups.flat().map((c) => ({ tokens: c.tokens.length, finished: c.finished })), run.maxCompletionTokens);
    const { batches, entropyThreshold } = referenceAndOldLogProbs(run, trained, step.advantages, objective);
    const tLogprobs = performance.now();
    const stats = updatePolicy(run, state, batches, objective, entropyThreshold);
    const tUpdate = performance.now();
    const row = trainRow(run, state.step, step, trained, stats, { tStart, tReward, tLogprobs, tUpdate });
    logStep(run, state, row, stats, sampleRows(run, state.step, step));
    // Checkpoint before evaluating: a run stopped during the evaluation resumes here and evaluates only what is missing.
    if (state.step % config.checkpointEvery === 0 || state.step === config.steps || state.step === stopAt) checkpoint(run, state);
    if (evaluationDue(run, state.step)) await evaluate(run, state, state.step);
    await letEventsThrough();
  }
  state.optimizer.dispose();
  if (run.learner !== setup.policy) run.learner.dispose(); // the ORT learner's sessions (the policy is the caller's)
  return { lastStep: state.step, evals: state.evals };
}

/** A text-only model (imageSize 0) cannot be trained on image actions: say so before anything is written. */
export function assertReadsModality(sampler: Sampler, modality: Modality): void {
  if (modality === 'image' && sampler.imageSize === 0) throw new UserError('the model reads text only and cannot train on image actions: use --modality text');
}

/**
 * The run's data: train episodes and prompts, the fixed test split in both modalities, the completion budget. The
 * episodes are generated from the seeds, or read from a dataset (--dataset).
 */
async function prepareRun(setup: TrainingSetup, rewards: RewardFunction[]): Promise<Run> {
  const { policy, config, modality, runDir, dataset } = setup;
  assertReadsModality(policy, modality);
  // One engine for both sides. tfjs: the policy samples and learns. ort: an ONNX Runtime session samples (reading the
  // policy's adapters after each update) and ONNX Runtime computes the LoRA gradients (models/onnx/ort-learner.ts);
  // the tfjs variables stay what AdamW updates and what checkpoints save.
  const engine = await openEngine(policy, config.engine, setup.ort);
  const sampler: Sampler = engine.sampler;
  const learner: Learner = engine.ortLearner ? ortLearner(policy, { threads: setup.ort?.threads, device: setup.ort?.device }) : policy;
  // Chat rows are prompted with their own messages, which the model's chatPrompt ends with the answer cue: the
  // completion is the answer alone, never the domain's trace layout.
  const env: Env = dataset?.format === 'chat' ? { ...setup.env, traceStates: undefined, traceStart: undefined } : setup.env;
  const prepare = (episodes: Episode[]): PreparedEpisode[] => episodes.map((episode) => ({ episode, prompt: sampler.prompt(env, episode) }));
  const prepareRows = async (items: DatasetItem[]): Promise<PreparedEpisode[]> => {
    const out: PreparedEpisode[] = [];
    for (const { episode, messages } of items) out.push({ episode, prompt: messages ? await sampler.chatPrompt(messages) : sampler.prompt(env, episode) });
    return out;
  };
  const trainSet = dataset
    ? await prepareRows(dataset.train)
    : prepare(generateEpisodes(env, { n: config.trainSize, actions: config.actions, split: 'train', seed: config.seed, modality, extra: setup.envExtra }));
  // A folder `metrl generate` wrote holds one split: without test rows, the domain's test split is generated as usual.
  const testEpisodes = dataset && (dataset.test.length > 0 || dataset.format === 'chat')
    ? dataset.test.map((i) => i.episode)
    : generateEpisodes(env, { n: config.testSize, actions: config.actions, split: 'test', seed: config.testSeed, modality, extra: setup.envExtra });
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
      testSets.push({ modality: transfer, role: 'transfer', items: prepare(testEpisodes.map((e) => withModality(e, transfer))) });
    }
  }
  // The completion budget fitted to the task: room for the longest reference completion, with a quarter to spare.
  const referenceEpisodes = [...trainSet.map((p) => p.episode), ...testEpisodes];
  const fitted = () => (referenceEpisodes.length === 0 ? FALLBACK_COMPLETION_TOKENS : completionBudget(referenceEpisodes.map((e) => sampler.referenceTokens(env, e))));
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
    maxCompletionTokens: config.maxCompletionTokens ?? fitted(),
    rewards,
    baseline: testEpisodes.length > 0 && dataset?.format !== 'chat',
  };
}

/** Give the event loop a turn (a Ctrl-C handler, a progress redraw): the loop's work is otherwise synchronous. */
function letEventsThrough(): Promise<void> {
  return new Promise((done) => setImmediate(done));
}

function evaluationDue(run: Run, step: number): boolean {
  return step === 0 || step % run.config.evalEvery === 0 || step === run.config.steps;
}

/** A fresh state, or the newest checkpoint's (adapter, optimiser, RNG, data order) with the logs cut back to it. */
function startOrResume(run: Run): RunState {
  const { config, setup } = run;
  // On resume the adapter is loaded first: loading may replace the policy's LoRA variables, and the optimiser must
  // hold the ones that will be trained.
  const checkpoint = setup.resume ? findCheckpoint(run) : null;
  if (checkpoint) {
    run.adapter.load(checkpoint.dir);
    run.engine.syncLora();
  }
  else if (!setup.resume && existsSync(run.metricsPath)) {
    throw new UserError(`${setup.runDir} already holds a run (metrics.jsonl); use --resume to continue it or choose another --out`);
  }
  const variables = run.learner.trainableVariables('lora');
  if (variables.length === 0) throw new Error('the policy has no LoRA variables to train');
  const optimizer = new AdamW(variables, {
    learningRate: config.learningRate,
    beta1: config.adamBeta1,
    beta2: config.adamBeta2,
    epsilon: config.adamEpsilon,
    weightDecay: config.weightDecay,
  });
  const state: RunState = { step: 0, nanStreak: 0, rng: new Rng(config.seed, 'rollouts'), order: new DataOrder(run.trainSet.length, config.seed), optimizer, variables, evals: [], logged: new Set(), checkpointed: checkpoint !== null };
  if (checkpoint) {
    optimizer.setState(checkpoint.optimizer);
    state.rng = Rng.fromState(checkpoint.state.rng);
    state.order.restore(checkpoint.state.dataOrder);
    state.step = checkpoint.state.step;
    state.nanStreak = checkpoint.state.nanStreak;
  }
  if (setup.resume) {
    // Rows after the starting step are cut (they are recomputed); those of the starting step itself are kept.
    const kept = truncateLogAfterStep<{ type: string; step: number; modality?: string }>(run.metricsPath, state.step);
    truncateLogAfterStep(run.samplesPath, state.step);
    for (const row of kept) {
      if (row.step !== state.step) continue;
      if (row.type === 'baseline') state.logged.add('baseline');
      if (row.type === 'eval') state.logged.add(`eval:${row.modality}`);
    }
  }
  return state;
}

/**
 * The newest checkpoint, or null for a run stopped before its step-0 checkpoint was written (nothing was trained:
 * it starts from the beginning). Training rows without any checkpoint mean the checkpoints were removed: an error.
 */
function findCheckpoint(run: Run): Checkpoint | null {
  const dir = latestCheckpointDir(run.checkpointsDir);
  if (dir) return readCheckpoint(dir, run.adapter);
  const trained = truncateLogAfterStep<{ type: string; step: number }>(run.metricsPath, Infinity).some((r) => r.type === 'train');
  if (trained) {
    throw new UserError(`--resume: ${run.metricsPath} has training steps but ${run.checkpointsDir} holds no checkpoint to continue from; start the run again in a new --out`);
  }
  return null;
}

/** The Game Start baseline on the test split, logged once at the start of a run. */
function logBaseline(run: Run): void {
  const baseline: BaselineRow = { type: 'baseline', step: 0, name: 'game-start', ...gameStartBaseline(run.env, run.testEpisodes) };
  appendJsonl(run.metricsPath, [baseline]);
  run.setup.onEvent?.({ kind: 'baseline', row: baseline });
}

/** Rollout: G completions for each of the next `prompts` prompts in the data order. */
function generateRollouts(run: Run, state: RunState, prompts: number): Rollouts {
  const { config } = run;
  const items = state.order.take(prompts).map((i) => run.trainSet[i]);
  const sampling: SamplingOptions = { temperature: config.temperature, topP: config.topP, maxNewTokens: run.maxCompletionTokens };
  // All prompts of a round decode as one batch: on CPU a decoding step costs little more for 64 rows than for 32.
  const groups = run.sampler.sampleGroups(items.map((item) => item.prompt), config.groupSize, sampling, state.rng);
  return { items, groups };
}

/**
 * Reward: every completion scored by the environment, then the reward functions of config.reward on the response
 * (the built-in 'domain' returns the score's reward, so by default the reward is exactly the environment's). Rewards
 * are computed before any update: a reward that throws stops the run with nothing of the step applied.
 */
async function rewardRollouts(run: Run, { items, groups }: Rollouts): Promise<RewardedRollouts> {
  const { env, sampler, config } = run;
  const inputs = items.flatMap((item, k) =>
    groups[k].map((c) => {
      const completion = sampler.responseOf(env, c.text);
      const score = env.score({ target: item.episode.target, response: completion, initialState: item.episode.initialState, meta: item.episode.meta });
      return { completion, episode: item.episode, score };
    }),
  );
  const { total, byName } = await computeRewards(run.rewards, inputs, config.rewardWeights);
  return { scores: inputs.map((i) => i.score), rewards: total, byName };
}

/**
 * Phases 1-2: rollouts and rewards for the step's prompts, then group-relative advantages of the groups trained on.
 * With dynamic sampling (DAPO), groups whose rewards are all equal are dropped and more prompts are drawn, round after
 * round (dynamic-sampling.ts sizes each draw), until the step has promptsPerStep × gradientAccumulation groups with a
 * spread or has made dynamicSamplingMaxDraws extra draws.
 */
async function collectGroups(run: Run, state: RunState): Promise<StepGroups> {
  const { config } = run;
  const G = config.groupSize;
  const targetGroups = config.promptsPerStep * config.gradientAccumulation;
  const drawn: Rollouts = { items: [], groups: [] };
  const rewarded: RewardedRollouts = { scores: [], rewards: [], byName: {} };
  const seconds = { rollout: 0, reward: 0 };
  const trained: number[] = [];
  let tally: DynamicSamplingTally | undefined = config.dynamicSampling ? startTally() : undefined;
  for (let prompts = targetGroups; prompts > 0; ) {
    const t0 = performance.now();
    const round = generateRollouts(run, state, prompts);
    const t1 = performance.now();
    const r = await rewardRollouts(run, round);
    seconds.rollout += (t1 - t0) / 1000;
    seconds.reward += (performance.now() - t1) / 1000;
    const offset = drawn.groups.length;
    drawn.items.push(...round.items);
    drawn.groups.push(...round.groups);
    rewarded.scores.push(...r.scores);
    rewarded.rewards.push(...r.rewards);
    for (const [name, values] of Object.entries(r.byName)) (rewarded.byName[name] ??= []).push(...values);
    if (!tally) {
      trained.push(...round.groups.map((_, g) => offset + g));
      break;
    }
    const decision = dynamicSamplingRound(tally, r.rewards, { groupSize: G, targetGroups, maxExtraDraws: config.dynamicSamplingMaxDraws });
    trained.push(...decision.keep.map((g) => offset + g));
    tally = decision.tally;
    prompts = decision.drawMore;
  }
  const trainedRewards = trained.flatMap((g) => rewarded.rewards.slice(g * G, (g + 1) * G));
  const advantages =
    trained.length === 0 ? new Float32Array(0) : groupAdvantages(trainedRewards, G, { scaleRewards: config.scaleRewards, epsilon: config.advantageEpsilon }).advantages;
  // Zero-spread groups over everything drawn, as without dynamic sampling (it drops exactly these).
  const { zeroSpreadGroups, groups: groupCount } = groupAdvantages(rewarded.rewards, G, { scaleRewards: config.scaleRewards, epsilon: config.advantageEpsilon });
  return { drawn, rewarded, trained, advantages, zeroSpreadGroups, groupCount, tally, seconds };
}

/** The groups the update uses, as rollouts (step order: the order their advantages are in). */
function trainedRollouts({ drawn, trained }: StepGroups): Rollouts {
  return { items: trained.map((g) => drawn.items[g]), groups: trained.map((g) => drawn.groups[g]) };
}

/**
 * Learner chunks of at most `learnerBatch` sequences and `learnerTokens` tokens, as the learner counts a pass
 * (Learner.passTokens: a shared prompt once) or else summed (a memory bound only: the loss divides
 * by the step's totals, so the summed chunk gradients equal the full-batch gradient), each with the reference and old
 * log-probs, which are constants of the step. With a top-entropy quantile below 1, the old-policy pass also gives the
 * entropies, pooled over the step into one threshold so that the mask does not depend on the chunking.
 */
function referenceAndOldLogProbs(
  run: Run,
  { items, groups }: Rollouts,
  advantages: Float32Array,
  objective: StepObjective,
): { batches: LearnerBatch[]; entropyThreshold?: number } {
  const { config, sampler } = run;
  const refIsPolicy = config.beta > 0 && run.engine.referenceIsPolicy();
  const sequences: SequenceBatchItem[] = items.flatMap((item, k) => groups[k].map((c) => ({ prompt: item.prompt, completion: c.tokens })));
  const pooled: Float32Array[] = [];
  const indexed = sequences.map((seq, i) => ({ seq, i }));
  // A learner that says what a pass costs (shared prompts counted once) is chunked by that; otherwise by the sum.
  const passTokens = run.learner.passTokens?.bind(run.learner);
  const planned = passTokens
    ? chunksByCost(indexed, (chunk) => passTokens(chunk.map((c) => c.seq)), config.learnerBatch, config.learnerTokens)
    : chunksWithin(indexed, ({ seq }) => seq.prompt.tokens.length + seq.completion.length, config.learnerBatch, config.learnerTokens);
  const seqsOf = planned.map((chunk) => chunk.map((c) => c.seq));
  // Every chunk's pass in one call where the sampler takes them together (it may spread them over cores).
  // (tidy: a tfjs forward's intermediates go, its results stay.)
  const scoreAll = (options: TokenLogProbsOptions): TokenLogProbs[] =>
    sampler.tokenLogProbsMany
      ? sampler.tokenLogProbsMany(seqsOf, options)
      : seqsOf.map((seqs) => tf.tidy(() => sampler.tokenLogProbs(seqs, options) as unknown as tf.TensorContainer) as unknown as TokenLogProbs);
  const refs = config.beta > 0 && !refIsPolicy ? scoreAll({ useLora: false, temperature: config.temperature }).map((lp) => {
    lp.mask.dispose();
    lp.entropy?.dispose();
    return tf.keep(lp.logProbs);
  }) : null;
  // With μ = 1 the old policy is the current one: its log-probs are taken from the gradient pass itself, and this
  // pass runs only when the entropy mask needs the step's entropies first.
  const olds = config.numIterations > 1 || objective.needsEntropy ? scoreAll({ useLora: true, withEntropy: objective.needsEntropy, temperature: config.temperature }) : null;
  const batches = planned.map((chunk, k) => {
    const seqs = seqsOf[k];
    const indices = chunk.map((c) => c.i);
    const adv = Float32Array.from(chunk, (c) => advantages[c.i]);
    const ref = refs ? refs[k] : null;
    let old: tf.Tensor2D | null = null;
    if (olds) {
      const lp = olds[k];
      if (lp.entropy) pooled.push(maskedValues(lp.entropy, lp.mask));
      if (config.numIterations > 1) old = lp.logProbs;
      else lp.logProbs.dispose();
      lp.mask.dispose();
      lp.entropy?.dispose();
    }
    return { seqs, adv, ref, old, indices, refIsPolicy };
  });
  if (!objective.needsEntropy) return { batches };
  const all = new Float32Array(pooled.reduce((n, p) => n + p.length, 0));
  pooled.reduce((at, p) => (all.set(p, at), at + p.length), 0);
  return { batches, entropyThreshold: entropyThreshold(all, null, config.topEntropyQuantile) };
}

/** Update: μ passes, each one AdamW step on the gradient summed over the chunks; a non-finite pass skips the rest. */
function updatePolicy(run: Run, state: RunState, batches: LearnerBatch[], objective: StepObjective, threshold?: number): UpdateStats {
  const { config, learner } = run;
  const stats: UpdateStats = { loss: 0, tokens: 0, kl: 0, clipped: 0, ratio: 0, entropy: 0, entropyTokens: 0, gradNorm: 0, updated: true, nonFinite: false, trl: emptyLossSums() };
  // Dynamic sampling kept no group with a spread: nothing to learn from this step.
  if (batches.length === 0) return { ...stats, updated: false };
  const options = threshold === undefined ? objective.options : { ...objective.options, entropyThreshold: threshold };
  for (let it = 0; it < config.numIterations && stats.updated; it++) {
    const lpOptions = { useLora: true, withEntropy: it === 0 || objective.needsEntropy, temperature: config.temperature };
    // All chunks in one call (a learner may run a prompt group split over chunks once, or spread the work over cores);
    // the losses run in chunk order, and the pass's gradient is the sum of the chunks'.
    const { values, grads: summed } = summedLossGradients(learner, batches.map((batch) => ({
      batch: batch.seqs,
      options: lpOptions,
      loss: (lp: TokenLogProbs) => {
        const ownRef = batch.refIsPolicy && batch.ref === null;
        const detached = batch.old === null || ownRef ? (tf.tensor(lp.logProbs.dataSync(), lp.logProbs.shape) as tf.Tensor2D) : null;
        const oldLogProbs = batch.old ?? detached!;
        // The first pass's own log-probs are the reference's (the adapters were zero); later passes (μ > 1) keep them.
        if (ownRef) batch.ref = tf.keep(tf.clone(detached!));
        const refLogProbs = batch.ref;
        const out = grpoLoss(
          { logProbs: lp.logProbs, oldLogProbs, refLogProbs, mask: lp.mask, advantages: tf.tensor1d(batch.adv), entropies: lp.entropy, ...objective.rows(batch.indices) },
          options,
        );
        stats.tokens += out.sums.tokens.dataSync()[0];
        stats.kl += out.sums.kl.dataSync()[0];
        stats.clipped += out.sums.clipped.dataSync()[0];
        stats.ratio += out.sums.ratio.dataSync()[0];
        if (it === 0 && lp.entropy) {
          stats.entropy += tf.sum(tf.mul(lp.entropy, lp.mask)).dataSync()[0];
          stats.entropyTokens += out.sums.tokens.dataSync()[0];
        }
        addLossSums(stats.trl, out.sums, it === 0 ? lp.entropy : undefined, lp.mask);
        return out.loss;
      },
    })), state.variables);
    const passLoss = values.reduce((sum, value) => sum + value.dataSync()[0], 0);
    tf.dispose(values);
    const clippedGrads = clipGradientsByGlobalNorm(summed, config.maxGradNorm);
    stats.loss += passLoss;
    stats.gradNorm += clippedGrads.norm;
    if (Number.isFinite(passLoss) && Number.isFinite(clippedGrads.norm)) {
      state.optimizer.apply(clippedGrads.grads);
      run.engine.syncLora();
    } else stats.updated = false;
    for (const t of Object.values(clippedGrads.grads)) t.dispose();
  }
  stats.nonFinite = !stats.updated;
  for (const b of batches) {
    b.ref?.dispose();
    b.old?.dispose();
  }
  return stats;
}

/**
 * The step's metrics.jsonl row. Rewards, validity and lengths are over every completion drawn (with dynamic sampling,
 * all rounds: what the policy wrote); the loss statistics and learner throughput over the trained groups. `trl` holds
 * the same step under TRL's GRPOTrainer keys (trl-metrics.ts), with dynamic_sampling/* when it is on.
 */
function trainRow(run: Run, step: number, groups: StepGroups, trained: Rollouts, stats: UpdateStats, t: { tStart: number; tReward: number; tLogprobs: number; tUpdate: number }): TrainRow {
  const { config } = run;
  const { scores, rewards, byName } = groups.rewarded;
  const completions = groups.drawn.groups.flat();
  const completionTokens = completions.reduce((s, c) => s + c.tokens.length, 0);
  const sequenceTokens = trained.items.reduce((s, item, k) => s + trained.groups[k].reduce((sum, c) => sum + item.prompt.tokens.length + c.tokens.length, 0), 0);
  const passes = config.numIterations;
  const learnerPasses = passes + (config.beta > 0 ? 1 : 0) + (passes > 1 || config.topEntropyQuantile < 1 ? 1 : 0);
  const n = rewards.length;
  const rewardMean = rewards.reduce((s, r) => s + r, 0) / n;
  const finiteOrNull = (x: number) => (Number.isFinite(x) ? x : null);
  const trained0 = trained.items.length === 0;
  const { tally } = groups;
  return {
    type: 'train',
    step,
    rewardMean,
    rewardStd: Math.sqrt(rewards.reduce((s, r) => s + (r - rewardMean) ** 2, 0) / n),
    accuracy: rewardMean,
    exactRate: rewards.filter((r) => r === 1).length / n,
    validRate: scores.filter((s) => s.valid).length / n,
    invalidFraction: scores.filter((s) => !s.valid).length / n,
    kl: config.beta > 0 && stats.tokens > 0 ? finiteOrNull(stats.kl / stats.tokens) : null,
    clipFraction: stats.tokens > 0 ? stats.clipped / stats.tokens : null,
    ratioMean: stats.tokens > 0 ? finiteOrNull(stats.ratio / stats.tokens) : null,
    entropy: stats.entropyTokens > 0 ? finiteOrNull(stats.entropy / stats.entropyTokens) : null,
    completionLength: completionTokens / n,
    loss: trained0 ? null : finiteOrNull(stats.loss / passes),
    gradNorm: trained0 ? null : finiteOrNull(stats.gradNorm / passes),
    zeroSpreadGroups: groups.zeroSpreadGroups,
    groups: groups.groupCount,
    updated: stats.updated,
    rolloutTokensPerSecond: completionTokens / Math.max(1e-9, groups.seconds.rollout),
    learnerTokensPerSecond: (sequenceTokens * learnerPasses) / Math.max(1e-9, (t.tUpdate - t.tReward) / 1000),
    time: {
      rollout: groups.seconds.rollout,
      reward: groups.seconds.reward,
      logprobs: (t.tLogprobs - t.tReward) / 1000,
      update: (t.tUpdate - t.tLogprobs) / 1000,
      total: (t.tUpdate - t.tStart) / 1000,
    },
    trl: trlMetrics({
      rewards,
      groupSize: config.groupSize,
      rewardsByName: byName,
      completionLengths: completions.map((c) => c.tokens.length),
      finished: completions.map((c) => c.finished),
      beta: config.beta,
      sums: stats.trl,
      dynamicSampling: tally && { kept: tally.kept, drawn: tally.drawn, dropped: tally.dropped, surplus: tally.surplus, extraDraws: tally.extraDraws },
    }),
  };
}

/**
 * The first `samplesPerStep` completions drawn in the step, for samples.jsonl, with the advantage the update gave them
 * (0 for a group dynamic sampling did not train on).
 */
function sampleRows(run: Run, step: number, { drawn, rewarded, trained, advantages }: StepGroups): SampleRow[] {
  const G = run.config.groupSize;
  const { scores, rewards } = rewarded;
  return drawn.groups.flat().slice(0, run.config.samplesPerStep).map((c, i) => {
    const g = Math.floor(i / G);
    const item = drawn.items[g];
    const at = trained.indexOf(g);
    const advantage = at < 0 ? 0 : advantages[at * G + (i % G)];
    return { step, episode: item.episode.id, target: item.episode.target, completion: c.text, reward: rewards[i], valid: scores[i].valid, advantage };
  });
}

/** Append the step's rows and stop the run after too many non-finite losses in a row. */
function logStep(run: Run, state: RunState, row: TrainRow, stats: UpdateStats, samples: SampleRow[]): void {
  const { setup, config } = run;
  if (stats.nonFinite) {
    state.nanStreak++;
    setup.onEvent?.({ kind: 'nan', step: state.step, streak: state.nanStreak });
  } else if (row.updated) state.nanStreak = 0;
  appendJsonl(run.metricsPath, [row]);
  appendJsonl(run.samplesPath, samples);
  setup.onEvent?.({ kind: 'step', row });
  if (state.nanStreak >= config.maxNanSteps) {
    throw new UserError(
      `the loss was not finite for ${state.nanStreak} steps in a row (steps ${state.step - state.nanStreak + 1}-${state.step}; updates skipped); ` +
        `lower --learning-rate or check the starting checkpoint`,
    );
  }
}

/**
 * Greedy accuracy on the fixed test split, in the trained and the transfer modality. Each modality's row is written as
 * soon as it is known; progress is reported after every decoding batch, and signals get through between batches.
 */
async function evaluate(run: Run, state: RunState, atStep: number): Promise<void> {
  const { env, sampler } = run;
  // Modalities evaluated at this step before an interruption are not evaluated again.
  const pending = run.testSets.filter(({ modality }) => !(atStep === state.step && state.logged.has(`eval:${modality}`)));
  if (pending.length === 0) return;
  const rows: EvalRow[] = [];
  for (const { modality, role, items } of pending) {
    const steps = evaluateSplitStepwise(sampler, env, items, modality, run.maxCompletionTokens, (text) => sampler.responseOf(env, text));
    run.setup.onEvent?.({ kind: 'eval-progress', step: atStep, modality, role, done: 0, total: items.length });
    let next = steps.next();
    while (!next.done) {
      run.setup.onEvent?.({ kind: 'eval-progress', step: atStep, modality, role, ...next.value });
      await letEventsThrough();
      next = steps.next();
    }
    const e = next.value;
    const row: EvalRow = { type: 'eval', step: atStep, modality, role, n: e.n, accuracy: e.accuracy, low: e.low, high: e.high, exactRate: e.exactRate, validRate: e.validRate, seconds: e.seconds };
    // Written as soon as it is known, so that a stop during the next modality keeps this one.
    appendJsonl(run.metricsPath, [row]);
    rows.push(row);
  }
  state.evals.push(...rows);
  run.setup.onEvent?.({ kind: 'eval', rows });
}

/** Adapter, optimiser and trainer state of the step, written atomically. */
function checkpoint(run: Run, state: RunState): void {
  const dir = saveCheckpoint(
    run.checkpointsDir,
    run.adapter,
    { version: TRAINER_STATE_VERSION, step: state.step, rng: state.rng.state(), dataOrder: state.order.state(), nanStreak: state.nanStreak },
    state.optimizer.getState(),
  );
  run.setup.onEvent?.({ kind: 'checkpoint', dir, step: state.step });
}
