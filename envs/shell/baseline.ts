// The paper's shell-game baselines (Table 2), as Env.baselineAnswer and Env.randomPerceptionAnswer: 'game-start'
// answers with the ball's starting shell; 'random' with a uniform shell (33.3%), and reads a perception image as a
// random swap.
import type { Rng } from '../../core/rng.ts';
import type { Episode } from '../../core/episode.ts';
import { swapText } from './episodes.ts';

/** Env.baselineAnswer: the starting shell ('game-start') or a uniform one ('random'). */
export function shellBaselineAnswer(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string {
  return baseline === 'game-start' ? episode.initialState : String(rng.range(1, 3));
}

/** Env.randomPerceptionAnswer: one of the three swaps, uniform. */
export function randomShellSwap(_episode: Episode, _index: number, rng: Rng): string {
  const [a, b] = rng.sample([1, 2, 3], 2).sort();
  return swapText([a, b]);
}
