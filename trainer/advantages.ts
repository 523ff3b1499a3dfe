// Group-relative advantages (GRPO): each completion's reward compared with the other completions of the same
// prompt, A = (r − mean) / (std + ε), or r − mean without std scaling (Dr. GRPO). A group whose rewards are all equal
// carries no learning signal (all advantages 0); those groups are counted so the log shows how much of a step was
// wasted.

export interface AdvantageOptions {
  /** Divide by the group's standard deviation (+ ε). */
  scaleRewards: boolean;
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

/**
 * Advantages for rewards laid out group by group (`groupSize` consecutive rewards per prompt). The std is the sample
 * std (n − 1), as in TRL, which the paper trained with.
 */
export function groupAdvantages(rewards: readonly number[], groupSize: number, options: AdvantageOptions): GroupAdvantages {
  if (groupSize < 2 || rewards.length % groupSize !== 0) {
    throw new RangeError(`groupAdvantages: ${rewards.length} rewards do not split into groups of ${groupSize}`);
  }
  const advantages = new Float32Array(rewards.length);
  let zeroSpreadGroups = 0;
  const groups = rewards.length / groupSize;
  for (let g = 0; g < groups; g++) {
    const group = rewards.slice(g * groupSize, (g + 1) * groupSize);
    const mean = group.reduce((s, r) => s + r, 0) / groupSize;
    const variance = group.reduce((s, r) => s + (r - mean) ** 2, 0) / (groupSize - 1);
    const std = Math.sqrt(variance);
    if (group.every((r) => r === group[0])) zeroSpreadGroups++;
    for (let i = 0; i < groupSize; i++) {
      const centred = group[i] - mean;
      advantages[g * groupSize + i] = options.scaleRewards ? centred / (std + options.epsilon) : centred;
    }
  }
  return { advantages, zeroSpreadGroups, groups };
}
