// The 95% interval of a test accuracy, by the environment's method: Wilson for binary rewards, a normal interval of
// the mean clustered by board for graded rewards (chess). Each test episode is its own board here (one greedy
// completion per episode), so the clusters are the episode ids.
import { clusteredMeanInterval, wilsonInterval, type Interval } from '../core/stats.ts';

export function accuracyInterval(method: 'wilson' | 'mean', rewards: number[], clusters: string[]): Interval | null {
  if (method === 'wilson') return wilsonInterval(rewards.filter((r) => r === 1).length, rewards.length);
  return clusteredMeanInterval(rewards, clusters);
}
