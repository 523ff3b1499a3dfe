// A training step's statistics under TRL's GRPOTrainer metric keys, so that metrl's logs read like
// TRL's: `reward`, `reward_std`, `frac_reward_zero_std`, `rewards/<name>/mean|std`, `completions/*`, `kl`, `entropy`,
// `clip_ratio/*`. Definitions follow TRL: stds are sample stds (n − 1); reward_std is over all the step's rewards
// (not per group); frac_reward_zero_std is the share of groups whose rewards are all equal (TRL counts completions
// whose group std is 0, the same number under 'group' and 'none' scaling); completions/clipped_ratio is the share of
// completions that hit the token limit; kl, entropy and the clip ratios are token means over the step (clip ratios:
// sequence means at sequence level), accumulated as sums by loss.ts. TRL 1.9's: clip_ratio/low_min and /high_max (the
// least / most clipped completion of the step; TRL takes them per micro-batch and averages, metrl's learner chunks
// being memory-only, over the step), cispo_clip_ratio, vespo/phi_seq_mean, entropy_coef and policy_loss (with an
// entropy bonus), step_time (seconds of the step) and num_tokens (prompt + completion tokens drawn so far).
import { sampleStd } from '../loss/advantages.ts';
import { CLIPPED_LOSS_TYPES, type LossType } from '../loss/loss.ts';
import { informativeGroups } from '../loss/dynamic-sampling.ts';
import type { StepLossSums } from '../loss/objective.ts';

export interface TrlStepStats {
  /** Total (weighted) reward of each completion, group after group. */
  rewards: readonly number[];
  groupSize: number;
  /** Each reward function's own values, unweighted, in the same order (rewards/<name>/mean and /std). */
  rewardsByName?: Readonly<Record<string, readonly number[]>>;
  /** Completion lengths in tokens. */
  completionLengths: readonly number[];
  /** Completion.finished for each completion. */
  finished: readonly boolean[];
  /** β: kl is only logged when the KL term is on. */
  beta: number;
  sums: StepLossSums;
  /** The loss type: clip_ratio/* for the clipped ones, cispo_clip_ratio for cispo, vespo/phi_seq_mean for vespo. Default 'grpo'. */
  lossType?: LossType;
  /** With an entropy bonus: the coefficient after the step (entropy_coef) and the loss before the bonus (policy_loss). */
  entropyBonus?: { coef: number; policyLoss: number | null };
  /** Seconds of the step (step_time) and prompt + completion tokens drawn so far in the run (num_tokens). */
  stepTime?: number;
  numTokens?: number;
  /** Dynamic sampling's counts, when it ran (metrl's own keys, under dynamic_sampling/). */
  dynamicSampling?: { kept: number; drawn: number; dropped: number; surplus: number; extraDraws: number };
}

export type TrlMetrics = Record<string, number | null>;

const mean = (xs: readonly number[]): number | null =>
  xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length;
const ratio = (num: number, den: number): number | null => (den > 0 && Number.isFinite(num / den) ? num / den : null);

export function trlMetrics(stats: TrlStepStats): TrlMetrics {
  const { rewards, completionLengths: lengths, finished, sums } = stats;
  const out: TrlMetrics = {};
  out['reward'] = mean(rewards);
  out['reward_std'] = rewards.length > 1 ? sampleStd(rewards) : null;
  const spread = informativeGroups(rewards, stats.groupSize);
  out['frac_reward_zero_std'] = spread.length > 0 ? spread.filter((s) => !s).length / spread.length : null;
  for (const [name, values] of Object.entries(stats.rewardsByName ?? {})) {
    out[`rewards/${name}/mean`] = mean(values);
    out[`rewards/${name}/std`] = values.length > 1 ? sampleStd(values) : null;
  }
  out['completions/mean_length'] = mean(lengths);
  out['completions/min_length'] = lengths.length > 0 ? Math.min(...lengths) : null;
  out['completions/max_length'] = lengths.length > 0 ? Math.max(...lengths) : null;
  out['completions/clipped_ratio'] = finished.length > 0 ? finished.filter((f) => !f).length / finished.length : null;
  // TRL logs 0 for the terminated lengths when no completion terminated.
  const terminated = lengths.filter((_, i) => finished[i]);
  out['completions/mean_terminated_length'] = mean(terminated) ?? 0;
  out['completions/min_terminated_length'] = terminated.length > 0 ? Math.min(...terminated) : 0;
  out['completions/max_terminated_length'] = terminated.length > 0 ? Math.max(...terminated) : 0;
  if (stats.beta !== 0) out['kl'] = ratio(sums.kl, sums.tokens);
  out['entropy'] = ratio(sums.entropy, sums.entropyTokens);
  const lossType = stats.lossType ?? 'grpo';
  if (CLIPPED_LOSS_TYPES.includes(lossType)) {
    out['clip_ratio/low_mean'] = ratio(sums.clipLow, sums.clipUnits);
    out['clip_ratio/high_mean'] = ratio(sums.clipHigh, sums.clipUnits);
    out['clip_ratio/region_mean'] = ratio(sums.clipRegion, sums.clipUnits);
    out['clip_ratio/low_min'] = Number.isFinite(sums.clipLowMin) ? sums.clipLowMin : null;
    out['clip_ratio/high_max'] = Number.isFinite(sums.clipHighMax) ? sums.clipHighMax : null;
  }
  if (lossType === 'cispo') out['cispo_clip_ratio'] = ratio(sums.cispoClipped, sums.tokens);
  if (lossType === 'vespo') out['vespo/phi_seq_mean'] = ratio(sums.phi, sums.rows);
  if (stats.entropyBonus) {
    out['entropy_coef'] = stats.entropyBonus.coef;
    out['policy_loss'] = stats.entropyBonus.policyLoss;
  }
  if (stats.stepTime !== undefined) out['step_time'] = stats.stepTime;
  if (stats.numTokens !== undefined) out['num_tokens'] = stats.numTokens;
  if (stats.dynamicSampling) {
    for (const [key, value] of Object.entries(stats.dynamicSampling)) out[`dynamic_sampling/${key}`] = value;
  }
  return out;
}
