// Boxes speed: episodes per second through the shared generator (sample a scenario, word it, split by signature),
// with the chat prompt built and the "FINAL ANSWER: <target>" response scored, as a training rollout would; for the
// base split at T = 12 and for the context-dependent AmbiRef and MoveContents kinds; test split (80% of candidates
// are rejected by signature there, so it is the slower side).
import { opsPerSecond, type BenchRow } from './table.ts';
import { boxesEnv } from '../envs/boxes/index.ts';
import { generateEpisodes } from '../envs/generate.ts';
import type { Split } from '../core/episode.ts';

const BATCH = 70;

async function episodesPerSecond(splitKind: string, split: Split, actions: number): Promise<number> {
  let seed = 0;
  return opsPerSecond(() => {
    const episodes = generateEpisodes(boxesEnv, {
      n: BATCH,
      actions,
      split,
      seed: seed++,
      modality: 'text',
      extra: { splitKind },
    });
    for (const episode of episodes) {
      boxesEnv.prompt(episode, { style: 'cot', shots: [] });
      boxesEnv.score({ target: episode.target, response: `FINAL ANSWER: ${episode.target}`, meta: episode.meta });
    }
    return episodes.length;
  }, 2000);
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const [kind, split] of [
    ['base', 'train'],
    ['base', 'test'],
    ['ambiref', 'train'],
    ['movecontents', 'train'],
  ] as const) {
    rows.push({
      group: 'boxes episodes',
      name: `${kind} ${split} (T=12, prompt + score)`,
      value: await episodesPerSecond(kind, split, 12),
      unit: 'episodes/s',
    });
  }
  return rows;
}
