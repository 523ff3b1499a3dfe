// MCST speed: episodes per second through the shared generator (sample a level's scenario, simulate it with and
// without its negated actions, choose a question), with the chat prompt built and the "FINAL ANSWER: <target>"
// response scored; per level (level 5 has up to 8 entities, 10 objects and 25 actions) and for matched pairs.
import { opsPerSecond, type BenchRow } from './table.ts';
import { mcstEnv } from '../envs/mcst/index.ts';
import { generateEpisodes } from '../envs/generate.ts';

const BATCH = 20;

async function episodesPerSecond(extra: Record<string, unknown>): Promise<number> {
  let seed = 0;
  return opsPerSecond(() => {
    const episodes = generateEpisodes(mcstEnv, {
      n: BATCH,
      actions: 0,
      split: 'train',
      seed: seed++,
      modality: 'text',
      extra,
    });
    for (const episode of episodes) {
      mcstEnv.prompt(episode, { style: 'state-tracking', shots: [] });
      mcstEnv.score({ target: episode.target, response: `FINAL ANSWER: ${episode.target}`, meta: episode.meta });
    }
    return episodes.length;
  }, 2000);
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const level of [1, 3, 5]) {
    rows.push({
      group: 'mcst episodes',
      name: `level ${level} (prompt + score)`,
      value: await episodesPerSecond({ level }),
      unit: 'episodes/s',
    });
  }
  rows.push({
    group: 'mcst episodes',
    name: 'all levels, matched pairs (both members)',
    value: await episodesPerSecond({ negation: 'paired' }),
    unit: 'episodes/s',
  });
  return rows;
}
