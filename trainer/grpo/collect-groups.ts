// Phases 1-2 of a step, TRL's _generate_and_score_completions: rounds of rollouts (the next prompts
// in the data order, a group of completions each, from the Sampler) and rewards (the environment's score, then the
// reward functions of --reward, weighted); with dynamic sampling, more rounds until the step holds enough groups with
// a reward spread; then the group-relative advantages of the groups trained on.
import type { Score } from '../../core/score.ts';
import type { Completion, SamplingOptions } from '../../models/types.ts';
import { groupAdvantages, normalizeThenSum } from '../loss/advantages.ts';
import { dynamicSamplingRound, startTally, type DynamicSamplingTally } from '../loss/dynamic-sampling.ts';
import { computeRewards } from './reward-functions.ts';
import type { PreparedEpisode } from '../periodic-eval.ts';
import type { Run } from './run.ts';
import type { RunState } from './run-state.ts';
import { recordRound, type SampleRecord } from './integrity.ts';
import type { RolloutQueue } from './rollout-queue.ts';

/** Phase 1: a group of completions for each prompt of the step, with what the sampler saw for each (integrity.ts). */
export interface Rollouts {
  items: PreparedEpisode[];
  groups: Completion[][];
  records: SampleRecord[][];
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
export interface StepGroups {
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
  /** Seconds spent generating (with --async: waiting for the round submitted ahead) and rewarding, over all rounds. */
  seconds: { rollout: number; reward: number };
  /** With --async: groups of the step's first round dropped as too stale and drawn again (rollout-queue.ts). */
  regenerated: number;
}

/** The rollouts' sampling settings. */
export function rolloutSampling(run: Run): SamplingOptions {
  const { temperature, topP, topK, minP } = run.config;
  return {
    temperature,
    topP,
    ...(topK > 0 ? { topK } : {}),
    ...(minP !== undefined ? { minP } : {}),
    maxNewTokens: run.maxCompletionTokens,
  };
}

/** Rollout: G completions for each of the next `prompts` prompts in the data order. */
async function generateRollouts(run: Run, state: RunState, prompts: number): Promise<Rollouts> {
  const { config } = run;
  const items = state.order.take(prompts).map((i) => run.trainSet[i]);
  const sampling = rolloutSampling(run);
  // All prompts of a round decode as one batch: on CPU a decoding step costs little more for 64 rows than for 32.
  // On rollout servers (models/remote/) the groups come back asynchronously; in-process they are drawn synchronously.
  const encoded = items.map((item) => item.prompt);
  const groups = run.sampler.sampleGroupsAsync
    ? await run.sampler.sampleGroupsAsync(encoded, config.groupSize, sampling, state.rng)
    : run.sampler.sampleGroups(encoded, config.groupSize, sampling, state.rng);
  return { items, groups, records: recordRound(encoded, groups, run.sampler.imageTokenId) };
}

/** With --async, the step's first round: the one the queue submitted ahead (rollout-queue.ts). */
async function queuedRollouts(
  run: Run,
  state: RunState,
  queue: RolloutQueue,
): Promise<Rollouts & { regenerated: number }> {
  const { prompts, groups, regenerated } = await queue.take(state.step);
  const items = prompts.map((i) => run.trainSet[i]);
  const encoded = items.map((item) => item.prompt);
  return { items, groups, records: recordRound(encoded, groups, run.sampler.imageTokenId), regenerated };
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
      const score = env.score({
        target: item.episode.target,
        response: completion,
        initialState: item.episode.initialState,
        meta: item.episode.meta,
      });
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
export async function collectGroups(run: Run, state: RunState, queue?: RolloutQueue): Promise<StepGroups> {
  const { config } = run;
  const G = config.groupSize;
  const targetGroups = config.promptsPerStep * config.gradientAccumulation;
  const drawn: Rollouts = { items: [], groups: [], records: [] };
  let regenerated = 0;
  const rewarded: RewardedRollouts = { scores: [], rewards: [], byName: {} };
  const seconds = { rollout: 0, reward: 0 };
  const trained: number[] = [];
  let tally: DynamicSamplingTally | undefined = config.dynamicSampling ? startTally() : undefined;
  for (let prompts = targetGroups; prompts > 0; ) {
    const t0 = performance.now();
    let round: Rollouts;
    if (queue !== undefined && drawn.groups.length === 0) {
      const queued = await queuedRollouts(run, state, queue);
      regenerated = queued.regenerated;
      round = queued;
    } else round = await generateRollouts(run, state, prompts);
    const t1 = performance.now();
    const r = await rewardRollouts(run, round);
    seconds.rollout += (t1 - t0) / 1000;
    seconds.reward += (performance.now() - t1) / 1000;
    const offset = drawn.groups.length;
    drawn.items.push(...round.items);
    drawn.groups.push(...round.groups);
    drawn.records.push(...round.records);
    rewarded.scores.push(...r.scores);
    rewarded.rewards.push(...r.rewards);
    for (const [name, values] of Object.entries(r.byName)) (rewarded.byName[name] ??= []).push(...values);
    if (!tally) {
      trained.push(...round.groups.map((_, g) => offset + g));
      break;
    }
    const decision = dynamicSamplingRound(tally, r.rewards, {
      groupSize: G,
      targetGroups,
      maxExtraDraws: config.dynamicSamplingMaxDraws,
    });
    trained.push(...decision.keep.map((g) => offset + g));
    tally = decision.tally;
    prompts = decision.drawMore;
  }
  const ofTrained = (values: readonly number[]) => trained.flatMap((g) => values.slice(g * G, (g + 1) * G));
  let advantages: Float32Array;
  if (trained.length === 0) advantages = new Float32Array(0);
  else if (config.multiObjectiveAggregation === 'normalize_then_sum') {
    // GDPO: each reward function normalised within its group, then the weighted sum over the step (advantages.ts).
    const byFunction = run.rewards.map((r) => ofTrained(rewarded.byName[r.name]));
    advantages = normalizeThenSum(
      byFunction,
      config.rewardWeights ?? run.rewards.map(() => 1),
      G,
      config.advantageEpsilon,
    ).advantages;
  } else
    advantages = groupAdvantages(ofTrained(rewarded.rewards), G, {
      scaleRewards: config.scaleRewards,
      epsilon: config.advantageEpsilon,
    }).advantages;
  // Zero-spread groups over everything drawn, as without dynamic sampling (it drops exactly these).
  const { zeroSpreadGroups, groups: groupCount } = groupAdvantages(rewarded.rewards, G, {
    scaleRewards: config.scaleRewards,
    epsilon: config.advantageEpsilon,
  });
  return { drawn, rewarded, trained, advantages, zeroSpreadGroups, groupCount, tally, seconds, regenerated };
}

/** The groups the update uses, as rollouts (step order: the order their advantages are in). */
export function trainedRollouts({ drawn, trained }: StepGroups): Rollouts {
  return {
    items: trained.map((g) => drawn.items[g]),
    groups: trained.map((g) => drawn.groups[g]),
    records: trained.map((g) => drawn.records[g]),
  };
}
