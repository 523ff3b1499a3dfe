// Group-relative advantages (GRPO). Each completion's reward is compared with the other completions of
// the same prompt: A = (r − mean_group) / (std + ε). TRL's scale_rewards picks the divisor:
//   'group' (GRPO)   the group's own std;
//   'batch'          the std of all the step's rewards (one number for the step; PPO-Lite), the mean still per group;
//   'none'           no division: A = r − mean_group (Dr. GRPO's unbiased advantages);
//   'mean'           the group's mean reward: A = (r − mean_group) / (mean_group + ε) (MaxRL, TRL's scale_rewards
//                    "mean"), which weighs a prompt by 1 / its success rate. Defined for rewards ≥ 0 (MaxRL's binary
//                    rewards): a group whose mean is negative would flip its advantages' signs, so it stops the run.
// Stds are sample stds (n − 1), as TRL's nanstd. A group whose rewards are all equal carries no learning signal (all
// advantages 0); those groups are counted so the log shows how much of a step was wasted.
// Several rewards (TRL's multi_objective_aggregation): 'sum_then_normalize' (default) sums the weighted rewards and
// takes the advantages of the sum as above; 'normalize_then_sum' (GDPO) is normalizeThenSum below.
import { UserError } from '../../core/errors.ts';

export const SCALE_REWARDS = ['group', 'batch', 'none', 'mean'] as const;
export const MULTI_OBJECTIVE_AGGREGATIONS = ['sum_then_normalize', 'normalize_then_sum'] as const;
export type ScaleRewards = (typeof SCALE_REWARDS)[number];

export interface AdvantageOptions {
  /** Which std divides the centred rewards; the old boolean form means true = 'group', false = 'none'. */
  scaleRewards: ScaleRewards | boolean;
  /** Added to the std before dividing. */
  epsilon: number;
}

export interface GroupAdvantages {
  /** One advantage per reward, in the order given (group after group). */
  advantages: Float32Array;
  /** Groups whose rewards are all equal. */
  zeroSpreadGroups: number;
  groups: number;
}

/** The sample standard deviation (n − 1); 0 for fewer than two values. */
export function sampleStd(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const mean = values.reduce((s, r) => s + r, 0) / values.length;
  return Math.sqrt(values.reduce((s, r) => s + (r - mean) ** 2, 0) / (values.length - 1));
}

/** The option's canonical form: configs written before TRL's names used a boolean. */
export function scaleRewardsMode(value: ScaleRewards | boolean): ScaleRewards {
  return value === true ? 'group' : value === false ? 'none' : value;
}

/**
 * Advantages for rewards laid out group by group (`groupSize` consecutive rewards per prompt). The std is the sample
 * std (n − 1), as in TRL, which the paper trained with.
 */
export function groupAdvantages(
  rewards: readonly number[],
  groupSize: number,
  options: AdvantageOptions,
): GroupAdvantages {
  if (groupSize < 2 || rewards.length % groupSize !== 0) {
    throw new RangeError(`groupAdvantages: ${rewards.length} rewards do not split into groups of ${groupSize}`);
  }
  const mode = scaleRewardsMode(options.scaleRewards);
  const advantages = new Float32Array(rewards.length);
  let zeroSpreadGroups = 0;
  const groups = rewards.length / groupSize;
  const batchStd = mode === 'batch' ? sampleStd(rewards) : 0;
  for (let g = 0; g < groups; g++) {
    const group = rewards.slice(g * groupSize, (g + 1) * groupSize);
    const mean = group.reduce((s, r) => s + r, 0) / groupSize;
    const variance = group.reduce((s, r) => s + (r - mean) ** 2, 0) / (groupSize - 1);
    const std = mode === 'batch' ? batchStd : Math.sqrt(variance);
    if (group.every((r) => r === group[0])) zeroSpreadGroups++;
    if (mode === 'mean' && mean < 0)
      throw new UserError(
        `scaleRewards 'mean' divides each group's advantages by its mean reward, and group ${g + 1} of the step has mean ${mean}: it needs rewards ≥ 0 (MaxRL's binary rewards); use 'group' or 'none'`,
      );
    const scale = mode === 'mean' ? mean : std;
    for (let i = 0; i < groupSize; i++) {
      const centred = group[i] - mean;
      advantages[g * groupSize + i] = mode === 'none' ? centred : centred / (scale + options.epsilon);
    }
  }
  return { advantages, zeroSpreadGroups, groups };
}

/**
 * GDPO's advantages of several rewards (TRL's normalize_then_sum), each reward k laid out group by group:
 *   n_ik = (r_ik − mean_group(r_k)) / (std_group(r_k) + ε)       each reward normalised within its group
 *   s_i  = Σ_k w_k n_ik                                            summed with the weights
 *   A_i  = (s_i − mean(s)) / (std(s) + ε)                          then normalised over the whole step
 * Stds are sample stds (n − 1); scale_rewards plays no part (as in TRL's code). `zeroSpreadGroups` counts the groups
 * whose summed raw rewards are all equal, as for the other aggregation.
 */
export function normalizeThenSum(
  rewardsByFunction: readonly (readonly number[])[],
  weights: readonly number[],
  groupSize: number,
  epsilon: number,
): GroupAdvantages {
  if (rewardsByFunction.length === 0 || weights.length !== rewardsByFunction.length) {
    throw new RangeError(`normalizeThenSum: ${weights.length} weights for ${rewardsByFunction.length} rewards`);
  }
  const n = rewardsByFunction[0].length;
  const summed = new Array<number>(n).fill(0);
  rewardsByFunction.forEach((rewards, k) => {
    if (rewards.length !== n)
      throw new RangeError(`normalizeThenSum: reward ${k} has ${rewards.length} values, reward 0 has ${n}`);
    const normalised = groupAdvantages(rewards, groupSize, { scaleRewards: 'group', epsilon }).advantages;
    normalised.forEach((v, i) => (summed[i] += weights[k] * v));
  });
  const mean = summed.reduce((s, x) => s + x, 0) / n;
  const std = sampleStd(summed);
  const advantages = Float32Array.from(summed, (x) => (x - mean) / (std + epsilon));
  const raw = new Array<number>(n).fill(0);
  rewardsByFunction.forEach((rewards, k) => rewards.forEach((r, i) => (raw[i] += weights[k] * r)));
  const { zeroSpreadGroups, groups } = groupAdvantages(raw, groupSize, { scaleRewards: 'group', epsilon });
  return { advantages, zeroSpreadGroups, groups };
}
