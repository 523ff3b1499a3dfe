// DAPO's dynamic sampling as a pure policy. A group whose completions all got the same reward has
// zero advantages and teaches nothing, so instead of training on it the step draws more prompts, until it holds
// `targetGroups` groups with a spread or has made `maxExtraDraws` extra draws. The loop owns the rollouts; this file
// only decides, round by round, which groups to keep and how many prompts to draw next:
//
//   let tally = startTally();
//   let prompts = take(targetGroups);
//   for (;;) {
//     const rewards = rollOut(prompts);                       // groupSize rewards per prompt, prompt after prompt
//     const round = dynamicSamplingRound(tally, rewards, options);
//     keep round.keep (indices of this round's prompts); tally = round.tally;
//     if (round.drawMore === 0) break;
//     prompts = take(round.drawMore);
//   }
//
// When the extra draws run out first, the step trains on the informative groups it has (fewer than the target; none
// means no update). Informative groups beyond the target are dropped, as DAPO truncates to the batch size.

export interface DynamicSamplingOptions {
  /** Completions per prompt. */
  groupSize: number;
  /** Informative groups the step wants (promptsPerStep × gradientAccumulation). */
  targetGroups: number;
  /** Rounds of rollouts after the first, at most. 0 = filter only, never draw again. */
  maxExtraDraws: number;
  /** Prompts in one extra draw, at most (a memory bound for the batched rollout). Default: targetGroups. */
  maxPromptsPerDraw?: number;
}

/** Counts over the step so far, for the next round's decision and for the log. */
export interface DynamicSamplingTally {
  /** Informative groups kept. */
  kept: number;
  /** Prompts drawn, first round included. */
  drawn: number;
  /** Groups dropped for zero spread. */
  dropped: number;
  /** Informative groups dropped because the target was already met. */
  surplus: number;
  /** Rounds after the first. */
  extraDraws: number;
}

export interface DynamicSamplingRound {
  /** Indices (into this round's prompts) of the groups to train on, in order. */
  keep: number[];
  /** Prompts to draw for the next round; 0 = the step is complete (or out of draws). */
  drawMore: number;
  /** True when the step holds targetGroups informative groups. */
  complete: boolean;
  tally: DynamicSamplingTally;
}

export function startTally(): DynamicSamplingTally {
  return { kept: 0, drawn: 0, dropped: 0, surplus: 0, extraDraws: 0 };
}

/** Whether each group (groupSize consecutive rewards) has a spread: not all its rewards equal. */
export function informativeGroups(rewards: readonly number[], groupSize: number): boolean[] {
  if (groupSize < 2 || rewards.length % groupSize !== 0) {
    throw new RangeError(`informativeGroups: ${rewards.length} rewards do not split into groups of ${groupSize}`);
  }
  const out: boolean[] = [];
  for (let g = 0; g < rewards.length; g += groupSize) {
    const group = rewards.slice(g, g + groupSize);
    out.push(!group.every((r) => r === group[0]));
  }
  return out;
}

/**
 * One round: keep the informative groups of `rewards` (this round's prompts, groupSize rewards each) up to the target,
 * and say how many prompts to draw next. The next draw is sized by the informative rate seen so far,
 * ceil(missing × drawn / informative) (missing × drawn when none was informative yet), capped by maxPromptsPerDraw.
 */
export function dynamicSamplingRound(
  tally: DynamicSamplingTally,
  rewards: readonly number[],
  options: DynamicSamplingOptions,
): DynamicSamplingRound {
  const informative = informativeGroups(rewards, options.groupSize);
  const keep: number[] = [];
  let { kept, dropped, surplus } = tally;
  informative.forEach((ok, g) => {
    if (!ok) dropped++;
    else if (kept < options.targetGroups) {
      keep.push(g);
      kept++;
    } else surplus++;
  });
  const next: DynamicSamplingTally = {
    kept,
    drawn: tally.drawn + informative.length,
    dropped,
    surplus,
    extraDraws: tally.drawn === 0 ? 0 : tally.extraDraws + 1,
  };
  const complete = kept >= options.targetGroups;
  let drawMore = 0;
  if (!complete && next.extraDraws < options.maxExtraDraws) {
    const missing = options.targetGroups - kept;
    const seenInformative = kept + surplus;
    const estimate = Math.ceil((missing * next.drawn) / Math.max(1, seenInformative));
    drawMore = Math.max(1, Math.min(options.maxPromptsPerDraw ?? options.targetGroups, estimate));
  }
  return { keep, drawMore, complete, tally: next };
}
