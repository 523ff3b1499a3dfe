// A training step's statistics under TRL's GRPOTrainer metric keys (layer: trainer/), so that metrl's logs read like
// TRL's: `reward`, `reward_std`, `frac_reward_zero_std`, `rewards/<name>/mean|std`, `completions/*`, `kl`, `entropy`,
// `clip_ratio/*`. Definitions follow TRL: stds are sample stds (n − 1); reward_std is over all the step's rewards
// (not per group); frac_reward_zero_std is the share of groups whose rewards are all equal (TRL counts completions
// whose group std is 0, the same number under 'group' and 'none' scaling); completions/clipped_ratio is the share of
// completions that hit the token limit; kl, entropy and the clip ratios are token means over the step (clip ratios:
// sequence means at sequence level), accumulated as sums by loss.ts.
import { sampleStd } from './advantages.ts';
import { informativeGroups } from './dynamic-sampling.ts';

/** Sums accumulated over a step's micro-batches and passes (LossSums read back as numbers, plus the entropy). */
export interface StepLossSums {
  tokens: number;
  kl: number;
  clipLow: number;
  clipHigh: number;
  clipRegion: number;
  clipUnits: number;
  /** Σ entropy over the real tokens, and how many tokens that is (0 when entropy was not computed). */
  entropy: number;
  entropyTokens: number;
}

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
  /** Dynamic sampling's counts, when it ran (metrl's own keys, under dynamic_sampling/). */
  dynamicSampling?: { kept: number; drawn: number; dropped: number; surplus: number; extraDraws: number };
}

export type TrlMetrics = Record<string, number | null>;

const mean = (xs: readonly number[]): number | null => (xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length);
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
  out['clip_ratio/low_mean'] = ratio(sums.clipLow, sums.clipUnits);
  out['clip_ratio/high_mean'] = ratio(sums.clipHigh, sums.clipUnits);
  out['clip_ratio/region_mean'] = ratio(sums.clipRegion, sums.clipUnits);
  if (stats.dynamicSampling) {
    for (const [key, value] of Object.entries(stats.dynamicSampling)) out[`dynamic_sampling/${key}`] = value;
  }
  return out;
}
