// Folders for the `metrl view` tests, written directly: a chess training run whose samples.jsonl names real episodes
// of its train split (so the server rebuilds their prompts and images) with an exact, a partly wrong and an invalid
// completion, and the learning curves of tests/cli/fake-run.ts.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeRun } from '../cli/fake-run.ts';
import { getEnv } from '../../envs/registry.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { expandPlacement } from '../../rewards/placement.ts';

export interface ChessRun {
  dir: string;
  /** Squares the partly wrong completion gets wrong (it answers the initial board). */
  wrongSquares: number;
  /** Action images per episode. */
  actions: number;
}

export async function chessRun(dir: string): Promise<ChessRun> {
  fakeRun(dir, 'chess', 'image', 0.02);
  const actions = 2;
  const config = { trainSize: 4, actions, seed: 0 };
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ domain: 'chess', modality: 'image', envExtra: {}, config }));
  const env = await getEnv('chess');
  const [a, b] = generateEpisodes(env, { n: config.trainSize, actions, split: 'train', seed: 0, modality: 'image' });
  const board = (fen: string) => expandPlacement(fen.split(' ')[0])!;
  const wrongSquares = board(b.initialState).filter((sq, i) => sq !== board(b.target)[i]).length;
  const rows = [
    {
      step: 1,
      episode: a.id,
      target: a.target,
      completion: `A: … \nFINAL ANSWER: ${a.target}`,
      reward: 1,
      valid: true,
      advantage: 0.5,
    },
    { step: 1, episode: a.id, target: a.target, completion: 'A: e2e4 ->', reward: 0, valid: false, advantage: -0.5 },
    {
      step: 2,
      episode: b.id,
      target: b.target,
      completion: `FINAL ANSWER: ${b.initialState}`,
      reward: (64 - wrongSquares) / 64,
      valid: true,
      advantage: 0,
    },
  ];
  writeFileSync(join(dir, 'samples.jsonl'), rows.map((r) => JSON.stringify(r) + '\n').join(''));
  return { dir, wrongSquares, actions };
}
