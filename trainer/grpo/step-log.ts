// Logging a step: its metrics.jsonl row (rewards and lengths over every completion drawn, loss
// statistics over the trained groups, timings, TRL's keys), its samples.jsonl rows, and the NaN streak that stops a
// run after too many non-finite losses in a row.
import { UserError } from '../../core/errors.ts';
import { appendJsonl } from '../../core/files.ts';
import { trlMetrics } from '../logs/trl-metrics.ts';
import { entropyBonusEnabled } from '../loss/entropy-control.ts';
import { correctionMetrics } from '../loss/rollout-correction.ts';
import type { SampleRow, TrainRow } from '../logs/metrics.ts';
import type { Run } from './run.ts';
import type { RunState } from './run-state.ts';
import type { Rollouts, StepGroups } from './collect-groups.ts';
import type { UpdateStats } from './update-policy.ts';

/**
 * The step's metrics.jsonl row. Rewards, validity and lengths are over every completion drawn (with dynamic sampling,
 * all rounds: what the policy wrote); the loss statistics and learner throughput over the trained groups. `trl` holds
 * the same step under TRL's GRPOTrainer keys (trl-metrics.ts), with dynamic_sampling/* when it is on.
 */
export function trainRow(
  run: Run,
  state: RunState,
  groups: StepGroups,
  trained: Rollouts,
  stats: UpdateStats,
  t: { tStart: number; tReward: number; tLogprobs: number; tUpdate: number; open?: number },
): TrainRow {
  const { config } = run;
  const { step } = state;
  // TRL's num_tokens: every completion drawn, with its prompt, counted into the run's total.
  state.numTokens += groups.drawn.items.reduce(
    (s, item, k) => s + groups.drawn.groups[k].reduce((sum, c) => sum + item.prompt.tokens.length + c.tokens.length, 0),
    0,
  );
  const { scores, rewards, byName } = groups.rewarded;
  const completions = groups.drawn.groups.flat();
  const completionTokens = completions.reduce((s, c) => s + c.tokens.length, 0);
  const sequenceTokens = trained.items.reduce(
    (s, item, k) => s + trained.groups[k].reduce((sum, c) => sum + item.prompt.tokens.length + c.tokens.length, 0),
    0,
  );
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
      ...(t.open !== undefined ? { open: t.open } : {}),
    },
    trl: {
      ...trlMetrics({
        rewards,
        groupSize: config.groupSize,
        rewardsByName: byName,
        completionLengths: completions.map((c) => c.tokens.length),
        finished: completions.map((c) => c.finished),
        beta: config.beta,
        sums: stats.trl,
        lossType: config.lossType,
        entropyBonus: entropyBonusEnabled(config)
          ? { coef: state.entropyControl.coef, policyLoss: trained0 ? null : finiteOrNull(stats.policyLoss / passes) }
          : undefined,
        stepTime: (t.tUpdate - t.tStart) / 1000,
        numTokens: state.numTokens,
        dynamicSampling: tally && {
          kept: tally.kept,
          drawn: tally.drawn,
          dropped: tally.dropped,
          surplus: tally.surplus,
          extraDraws: tally.extraDraws,
        },
      }),
      ...stats.logpDifference.metrics(),
      ...(stats.correction ? correctionMetrics(stats.correction) : {}),
    },
    ...(run.engine.remote
      ? {
          rollout: {
            servers: groups.drawn.groups.map((g) => g[0]?.origin?.server ?? ''),
            adapterVersions: groups.drawn.groups.map((g) => g[0]?.origin?.adapterVersion ?? -1),
            retries: run.engine.remote.retries(),
          },
        }
      : {}),
  };
}

/**
 * The first `samplesPerStep` completions drawn in the step, for samples.jsonl, with the advantage the update gave them
 * (0 for a group dynamic sampling did not train on).
 */
export function sampleRows(run: Run, step: number, { drawn, rewarded, trained, advantages }: StepGroups): SampleRow[] {
  const G = run.config.groupSize;
  const { scores, rewards } = rewarded;
  return drawn.groups
    .flat()
    .slice(0, run.config.samplesPerStep)
    .map((c, i) => {
      const g = Math.floor(i / G);
      const item = drawn.items[g];
      const at = trained.indexOf(g);
      const advantage = at < 0 ? 0 : advantages[at * G + (i % G)];
      return {
        step,
        episode: item.episode.id,
        target: item.episode.target,
        completion: c.text,
        reward: rewards[i],
        valid: scores[i].valid,
        advantage,
      };
    });
}

/** Append the step's rows and stop the run after too many non-finite losses in a row. */
export function logStep(run: Run, state: RunState, row: TrainRow, stats: UpdateStats, samples: SampleRow[]): void {
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
