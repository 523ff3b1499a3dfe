// The worked example's reward (`--reward examples/still-shell/reward.ts`): 1 for answering the shell the swap leaves
// in place and nothing else, 0.5 for starting the answer with it ("2 swap 3": the base model's habit is to transcribe
// the swap it sees), 0 otherwise. The partial credit gives GRPO a spread to learn from while the exact answer is still
// rare. `completion` is the answer as the domain's reward reads it ("FINAL ANSWER: 2"); `episode.target` the row's.
import type { Episode } from '../../core/episode.ts';

export default function stillShell(completion: string, episode: Episode): number {
  const answer = completion.replace(/^FINAL ANSWER:\s*/, '').trim();
  if (answer === episode.target) return 1;
  return answer.startsWith(episode.target) ? 0.5 : 0;
}
