// The GRPO training loop. One step: take the next prompts in the data order, sample a group of completions for each
// (rollout), score them with the environment (reward), turn rewards into group-relative advantages, compute the
// reference (LoRA off) and old-policy log-probabilities (logprobs), then run μ passes of the clipped surrogate + KL
// loss, summing gradients over the micro-batches and applying one AdamW update per pass (update). Every K steps the
// policy is evaluated greedily on a fixed test split in the trained and the transfer modality, and a checkpoint is
// written; `resume` continues from the newest checkpoint and reproduces the uninterrupted run.
import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Env } from '../envs/env.ts';
import type { Episode, Modality } from '../core/episode.ts';
import { generateEpisodes, withModality } from '../envs/generate.ts';
import type { Completion, EncodedPrompt, Policy, SequenceBatchItem } from '../models/types.ts';
import { Rng } from '../core/rng.ts';
import { UserError } from '../core/errors.ts';
import { appendJsonl } from '../core/files.ts';
import type { TrainConfig } from './config.ts';
import { groupAdvantages } from './advantages.ts';
import { clipGradientsByGlobalNorm, grpoLoss } from './loss.ts';
import { AdamW } from './adamw.ts';
import { DataOrder } from './data-order.ts';
import { completionBudget, evaluateSplit, gameStartBaseline, type PreparedEpisode } from './evaluate.ts';
import { chunksWithin, sampleMany } from './rollout.ts';
import { latestCheckpointDir, readCheckpoint, saveCheckpoint, TRAINER_STATE_VERSION, type AdapterStore } from './checkpoint.ts';
import { truncateLogAfterStep, type BaselineRow, type EvalRow, type SampleRow, type TrainRow } from './metrics.ts';

export interface TrainingSetup {
  env: Env;
  policy: Policy;
  /** Writes and reads the policy's adapter inside checkpoints. */
  adapter: AdapterStore;
  /** An episode as this policy's prompt (its template, with image actions rendered). */
  encodeEpisode(episode: Episode): EncodedPrompt;
  config: TrainConfig;
  /** The modality trained on; the other one is tracked as the transfer modality. */
  modality: Modality;
  /** Run folder: metrics.jsonl, samples.jsonl and checkpoints/ go here. */
  runDir: string;
  /** Continue from the newest checkpoint in runDir/checkpoints. */
  resume: boolean;
  /** The text a reward function scores for a completion (the built-in template puts the answer cue in the prompt). */
  responseOf?(completionText: string): string;
  /** Tokens of the reference completion of an episode; fits the completion budget when the config leaves it unset. */
  referenceTokens?(episode: Episode): number;
  /** Environment options for the episode generator (e.g. chess games file). */
  envExtra?: Record<string, unknown>;
  onEvent?(event: TrainEvent): void;
  /** Stop cleanly after this step (tests simulate an interruption with it). */
  stopAfterStep?: number;
}

export type TrainEvent =
  | { kind: 'start'; fromStep: number; steps: number; trainEpisodes: number; testEpisodes: number; maxCompletionTokens: number }
  | { kind: 'step'; row: TrainRow }
  | { kind: 'eval'; rows: EvalRow[] }
  | { kind: 'baseline'; row: BaselineRow }
  | { kind: 'checkpoint'; dir: string; step: number }
  | { kind: 'nan'; step: number; streak: number };

export interface TrainingResult {
  lastStep: number;
  evals: EvalRow[];
}

/** Without a reference length (a policy that does not say), a budget that fits a FEN answer with room to spare. */
const FALLBACK_COMPLETION_TOKENS = 128;

/** The completion budget fitted to the task: room for the longest reference completion, with a quarter to spare. */
function fittedCompletionBudget(setup: TrainingSetup, episodes: Episode[]): number {
  if (!setup.referenceTokens || episodes.length === 0) return FALLBACK_COMPLETION_TOKENS;
  return completionBudget(episodes.map((e) => setup.referenceTokens!(e)));
}

export const otherModality = (m: Modality): Modality => (m === 'text' ? 'image' : 'text');

export async function train(setup: TrainingSetup): Promise<TrainingResult> {
  const { env, policy, config, modality, runDir } = setup;
  const metricsPath = join(runDir, 'metrics.jsonl');
  const samplesPath = join(runDir, 'samples.jsonl');
  const checkpointsDir = join(runDir, 'checkpoints');
  const responseOf = setup.responseOf ?? ((text: string) => text);

  const prepare = (episodes: Episode[]): PreparedEpisode[] => episodes.map((episode) => ({ episode, prompt: setup.encodeEpisode(episode) }));
  const trainSet = prepare(
    generateEpisodes(env, { n: config.trainSize, actions: config.actions, split: 'train', seed: config.seed, modality, extra: setup.envExtra }),
  );
  const testEpisodes = generateEpisodes(env, { n: config.testSize, actions: config.actions, split: 'test', seed: config.testSeed, modality, extra: setup.envExtra });
  const transfer = otherModality(modality);
  const testSets: Array<{ modality: Modality; role: 'train' | 'transfer'; items: PreparedEpisode[] }> = [
    { modality, role: 'train', items: prepare(testEpisodes.map((e) => withModality(e, modality))) },
  ];
  // Environments whose actions have one form only (boxes, MCST: text; MATE, REM: images) have no transfer modality.
  if (!env.modalities || env.modalities.includes(transfer)) {
    testSets.push({ modality: transfer, role: 'transfer', items: prepare(testEpisodes.map((e) => withModality(e, transfer))) });
  }

  const maxCompletionTokens = config.maxCompletionTokens ?? fittedCompletionBudget(setup, [...trainSet.map((p) => p.episode), ...testEpisodes]);

  // On resume the adapter is loaded first: loading may replace the policy's LoRA variables, and the optimiser must
  // hold the ones that will be trained.
  const checkpoint = setup.resume ? findCheckpoint() : null;
  if (checkpoint) setup.adapter.load(checkpoint.dir);
  else if (existsSync(metricsPath)) {
    throw new UserError(`${runDir} already holds a run (metrics.jsonl); use --resume to continue it or choose another --out`);
  }
  const variables = policy.trainableVariables('lora');
  if (variables.length === 0) throw new Error('the policy has no LoRA variables to train');
  const optimizer = new AdamW(variables, {
    learningRate: config.learningRate,
    beta1: config.adamBeta1,
    beta2: config.adamBeta2,
    epsilon: config.adamEpsilon,
    weightDecay: config.weightDecay,
  });
  let rng = new Rng(config.seed, 'rollouts');
  const order = new DataOrder(trainSet.length, config.seed);
  let step = 0;
  let nanStreak = 0;
  if (checkpoint) {
    optimizer.setState(checkpoint.optimizer);
    rng = Rng.fromState(checkpoint.state.rng);
    order.restore(checkpoint.state.dataOrder);
    step = checkpoint.state.step;
    nanStreak = checkpoint.state.nanStreak;
    truncateLogAfterStep(metricsPath, step);
    truncateLogAfterStep(samplesPath, step);
  }

  setup.onEvent?.({ kind: 'start', fromStep: step, steps: config.steps, trainEpisodes: trainSet.length, testEpisodes: testEpisodes.length, maxCompletionTokens });
  const evals: EvalRow[] = [];
  const evaluate = (atStep: number) => {
    const rows = testSets.map(({ modality: m, role, items }) => {
      const e = evaluateSplit(policy, env, items, m, maxCompletionTokens, responseOf);
      const row: EvalRow = { type: 'eval', step: atStep, modality: m, role, n: e.n, accuracy: e.accuracy, low: e.low, high: e.high, exactRate: e.exactRate, validRate: e.validRate, seconds: e.seconds };
      return row;
    });
    appendJsonl(metricsPath, rows);
    evals.push(...rows);
    setup.onEvent?.({ kind: 'eval', rows });
  };
  if (step === 0) {
    const baseline: BaselineRow = { type: 'baseline', step: 0, name: 'game-start', ...gameStartBaseline(env, testEpisodes) };
    appendJsonl(metricsPath, [baseline]);
    setup.onEvent?.({ kind: 'baseline', row: baseline });
    evaluate(0);
  }

  const stopAt = Math.min(config.steps, setup.stopAfterStep ?? Infinity);
  while (step < stopAt) {
    step++;
    const { row, samples } = trainStep(step);
    if (!row.updated) {
      nanStreak++;
      setup.onEvent?.({ kind: 'nan', step, streak: nanStreak });
    } else nanStreak = 0;
    appendJsonl(metricsPath, [row]);
    appendJsonl(samplesPath, samples);
    setup.onEvent?.({ kind: 'step', row });
    if (nanStreak >= config.maxNanSteps) {
      throw new UserError(
        `the loss was not finite for ${nanStreak} steps in a row (steps ${step - nanStreak + 1}-${step}; updates skipped); ` +
          `lower --learning-rate or check the starting checkpoint`,
      );
    }
    if (step % config.evalEvery === 0 || step === config.steps) evaluate(step);
    if (step % config.checkpointEvery === 0 || step === config.steps || step === stopAt) {
      const dir = saveCheckpoint(
        checkpointsDir,
        setup.adapter,
        { version: TRAINER_STATE_VERSION, step, rng: rng.state(), dataOrder: order.state(), nanStreak },
        optimizer.getState(),
      );
      setup.onEvent?.({ kind: 'checkpoint', dir, step });
    }
  }
  optimizer.dispose();
  return { lastStep: step, evals };

  function findCheckpoint() {
    const dir = latestCheckpointDir(checkpointsDir);
    if (!dir) {
      throw new UserError(
        `--resume: no checkpoint in ${checkpointsDir} (the run stopped before its first one, every ${config.checkpointEvery} steps); ` +
          `remove ${runDir} and start it again`,
      );
    }
    return readCheckpoint(dir, setup.adapter);
  }

  function trainStep(atStep: number): { row: TrainRow; samples: SampleRow[] } {
    const G = config.groupSize;
    const tStart = performance.now();

    // Rollout: G completions for each prompt of the step.
    const items = order.take(config.promptsPerStep * config.gradientAccumulation).map((i) => trainSet[i]);
    const sampling = { temperature: config.temperature, topP: config.topP, maxNewTokens: maxCompletionTokens };
    // All prompts of the step decode as one batch: on CPU a decoding step costs little more for 64 rows than for 32.
    const groups: Completion[][] = sampleMany(policy, items.map((item) => item.prompt), G, sampling, rng);
    const tRollout = performance.now();

    // Reward and advantages.
    const scores = items.flatMap((item, k) =>
      groups[k].map((c) => env.score({ target: item.episode.target, response: responseOf(c.text), initialState: item.episode.initialState, meta: item.episode.meta })),
    );
    const rewards = scores.map((s) => s.reward);
    const { advantages, zeroSpreadGroups, groups: groupCount } = groupAdvantages(rewards, G, { scaleRewards: config.scaleRewards, epsilon: config.advantageEpsilon });
    const tReward = performance.now();

    // Learner chunks of at most `learnerBatch` sequences and `learnerTokens` tokens (a memory bound only: the loss
    // divides by the step's totals, so the summed chunk gradients equal the full-batch gradient). Reference and old
    // log-probs are constants of the step.
    const totalSequences = items.length * G;
    const sequences: SequenceBatchItem[] = items.flatMap((item, k) => groups[k].map((c) => ({ prompt: item.prompt, completion: c.tokens })));
    const batches = chunksWithin(
      sequences.map((seq, i) => ({ seq, i })),
      ({ seq }) => seq.prompt.tokens.length + seq.completion.length,
      config.learnerBatch,
      config.learnerTokens,
    ).map((chunk) => {
      const seqs = chunk.map((c) => c.seq);
      const adv = Float32Array.from(chunk, (c) => advantages[c.i]);
      const ref = config.beta > 0 ? tf.keep(tf.tidy(() => policy.tokenLogProbs(seqs, { useLora: false, temperature: config.temperature }).logProbs)) : null;
      // With μ = 1 the old policy is the current one: its log-probs are taken from the gradient pass itself.
      const old = config.iterations > 1 ? tf.keep(tf.tidy(() => policy.tokenLogProbs(seqs, { useLora: true, temperature: config.temperature }).logProbs)) : null;
      return { seqs, adv, ref, old };
    });
    const tLogprobs = performance.now();

    // Update: μ passes, each one AdamW step on the gradient summed over the chunks.
    const stats = { loss: 0, tokens: 0, kl: 0, clipped: 0, ratio: 0, entropy: 0, entropyTokens: 0, gradNorm: 0 };
    let updated = true;
    for (let it = 0; it < config.iterations && updated; it++) {
      let summed: tf.NamedTensorMap | null = null;
      let passLoss = 0;
      for (const batch of batches) {
        const { value, grads } = tf.variableGrads(() => {
          const lp = policy.tokenLogProbs(batch.seqs, { useLora: true, withEntropy: it === 0, temperature: config.temperature });
          const oldLogProbs = batch.old ?? (tf.tensor(lp.logProbs.dataSync(), lp.logProbs.shape) as tf.Tensor2D);
          const out = grpoLoss(
            { logProbs: lp.logProbs, oldLogProbs, refLogProbs: batch.ref, mask: lp.mask, advantages: tf.tensor1d(batch.adv) },
            { epsilon: config.epsilon, beta: config.beta, lossType: config.lossType, maxCompletionTokens, totalSequences },
          );
          stats.tokens += out.sums.tokens.dataSync()[0];
          stats.kl += out.sums.kl.dataSync()[0];
          stats.clipped += out.sums.clipped.dataSync()[0];
          stats.ratio += out.sums.ratio.dataSync()[0];
          if (lp.entropy) {
            stats.entropy += tf.sum(tf.mul(lp.entropy, lp.mask)).dataSync()[0];
            stats.entropyTokens += out.sums.tokens.dataSync()[0];
          }
          return out.loss;
        }, variables);
        passLoss += value.dataSync()[0];
        value.dispose();
        if (summed === null) summed = grads;
        else {
          const next: tf.NamedTensorMap = {};
          for (const name of Object.keys(grads)) {
            next[name] = tf.add(summed[name], grads[name]);
            summed[name].dispose();
            grads[name].dispose();
          }
          summed = next;
        }
      }
      const clippedGrads = clipGradientsByGlobalNorm(summed!, config.maxGradNorm);
      stats.loss += passLoss;
      stats.gradNorm += clippedGrads.norm;
      if (Number.isFinite(passLoss) && Number.isFinite(clippedGrads.norm)) optimizer.apply(clippedGrads.grads);
      else updated = false;
      for (const t of Object.values(clippedGrads.grads)) t.dispose();
    }
    for (const b of batches) {
      b.ref?.dispose();
      b.old?.dispose();
    }
    const tUpdate = performance.now();

    const completions = groups.flat();
    const completionTokens = completions.reduce((s, c) => s + c.tokens.length, 0);
    const sequenceTokens = items.reduce((s, item, k) => s + groups[k].reduce((t, c) => t + item.prompt.tokens.length + c.tokens.length, 0), 0);
    const learnerPasses = config.iterations + (config.beta > 0 ? 1 : 0) + (config.iterations > 1 ? 1 : 0);
    const n = rewards.length;
    const rewardMean = rewards.reduce((s, r) => s + r, 0) / n;
    const passes = config.iterations;
    const finiteOrNull = (x: number) => (Number.isFinite(x) ? x : null);
    const row: TrainRow = {
      type: 'train',
      step: atStep,
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
      loss: finiteOrNull(stats.loss / passes),
      gradNorm: finiteOrNull(stats.gradNorm / passes),
      zeroSpreadGroups,
      groups: groupCount,
      updated,
      rolloutTokensPerSecond: completionTokens / Math.max(1e-9, (tRollout - tStart) / 1000),
      learnerTokensPerSecond: (sequenceTokens * learnerPasses) / Math.max(1e-9, (tUpdate - tReward) / 1000),
      time: {
        rollout: (tRollout - tStart) / 1000,
        reward: (tReward - tRollout) / 1000,
        logprobs: (tLogprobs - tReward) / 1000,
        update: (tUpdate - tLogprobs) / 1000,
        total: (tUpdate - tStart) / 1000,
      },
    };
    const samples: SampleRow[] = completions.slice(0, config.samplesPerStep).map((c, i) => {
      const item = items[Math.floor(i / G)];
      return { step: atStep, episode: item.episode.id, target: item.episode.target, completion: c.text, reward: rewards[i], valid: scores[i].valid, advantage: advantages[i] };
    });
    return { row, samples };
  }
}
