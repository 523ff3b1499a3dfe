// MATE speed: items per second generated with their prompt and the scene rendered at the built-in model's size (as a
// training rollout needs them) and at the chat size (as evaluation of hosted models needs them), and scene renders
// per second at both sizes.
import { opsPerSecond, type BenchRow } from './table.ts';
import { mateEnv } from '../envs/mate/index.ts';
import { generateEpisodes } from '../envs/generate.ts';

const BATCH = 100;

async function episodesPerSecond(size: number): Promise<number> {
  let seed = 0;
  return opsPerSecond(() => {
    const episodes = generateEpisodes(mateEnv, {
      n: BATCH,
      actions: 1,
      split: 'train',
      seed: seed++,
      modality: 'image',
      extra: { 'mate-task': 'all' },
    });
    for (const episode of episodes) {
      mateEnv.prompt(episode, { style: 'few-shot', shots: [] });
      mateEnv.renderAction(episode, 0, size);
    }
    return episodes.length;
  });
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const size of [mateEnv.imageSizes.model, mateEnv.imageSizes.chat]) {
    rows.push({
      group: 'mate episodes',
      name: `all tasks, 3-10 objects, 2 shots, prompt + ${size}px scene`,
      value: await episodesPerSecond(size),
      unit: 'episodes/s',
    });
  }
  const episodes = generateEpisodes(mateEnv, {
    n: 50,
    actions: 1,
    split: 'train',
    seed: 1,
    modality: 'image',
    extra: { 'mate-objects': 10 },
  });
  for (const size of [mateEnv.imageSizes.chat, mateEnv.imageSizes.model]) {
    const value = await opsPerSecond(() => {
      for (const e of episodes) mateEnv.renderAction(e, 0, size);
      return episodes.length;
    });
    rows.push({ group: 'mate render', name: `10-object scene @${size}px (raw RGB)`, value, unit: 'images/s' });
  }
  return rows;
}
