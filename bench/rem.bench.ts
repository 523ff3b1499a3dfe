// REM speed: episodes (questions) per second generated with their visibility (every frame rendered at the reference
// size), their prompt, and every frame rendered at the built-in model's size; the same with frames at the chat size;
// and single frames rendered per second at both sizes. Several questions share one trajectory, as in the generator.
import { opsPerSecond, type BenchRow } from './table.ts';
import { remEnv } from '../envs/rem/index.ts';
import { generateEpisodes } from '../envs/generate.ts';

const FRAMES = 8;
const BATCH = 20;

async function episodesPerSecond(size: number, objects: string): Promise<number> {
  let seed = 0;
  return opsPerSecond(() => {
    const episodes = generateEpisodes(remEnv, {
      n: BATCH,
      actions: FRAMES,
      split: 'train',
      seed: seed++,
      modality: 'image',
      extra: { 'rem-objects': objects },
    });
    for (const episode of episodes) {
      remEnv.prompt(episode, { style: 'zero-shot', shots: [] });
      episode.actions.forEach((_, i) => remEnv.renderAction(episode, i, size));
    }
    return episodes.length;
  });
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const objects of ['8', '48']) {
    for (const size of [remEnv.imageSizes.model, remEnv.imageSizes.chat]) {
      rows.push({
        group: 'rem episodes',
        name: `baseline, ${FRAMES} frames, ${objects} objects, prompt + frames @${size}px`,
        value: await episodesPerSecond(size, objects),
        unit: 'episodes/s',
      });
    }
  }
  const [episode] = generateEpisodes(remEnv, {
    n: 1,
    actions: 16,
    split: 'train',
    seed: 1,
    modality: 'image',
    extra: { 'rem-objects': 24 },
  });
  for (const size of [remEnv.imageSizes.chat, remEnv.imageSizes.model]) {
    const value = await opsPerSecond(() => {
      episode.actions.forEach((_, i) => remEnv.renderAction(episode, i, size));
      return episode.actions.length;
    });
    rows.push({ group: 'rem render', name: `frame with 24 objects @${size}px (raw RGB)`, value, unit: 'frames/s' });
  }
  return rows;
}
