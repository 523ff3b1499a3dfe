// The worked example's reward (`--reward examples/count-swaps/partial-count.ts`, logged as rewards/partial-count/*):
// 1 for the right count, 0.5 for a count one off, 0 otherwise (no digit, or two off). The partial credit tells GRPO
// which wrong answers are nearer.
// `completion` is the answer as the domain's reward reads it ("FINAL ANSWER: 2"); `episode.target` is the row's.
import type { Episode } from '../../core/episode.ts';

export default function partialCount(completion: string, episode: Episode): number {
  const answer = /^FINAL ANSWER:\s*(\d+)\s*$/.exec(completion)?.[1];
  if (answer === undefined) return 0;
  const off = Math.abs(Number(answer) - Number(episode.target));
  return off === 0 ? 1 : off === 1 ? 0.5 : 0;
}
