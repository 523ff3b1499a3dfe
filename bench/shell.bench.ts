// Shell game speed: episodes per second for text, image and mixed actions (sample the episode, build its chat prompt
// and render every image action at the built-in model's size, as a training rollout does), and image actions rendered
// per second at both sizes (raw RGB, the form the built-in model reads), plus PNG-encoded actions for datasets.
import { opsPerSecond, type BenchRow } from './table.ts';
import { shellEnv } from '../envs/shell/index.ts';
import { generateEpisodes } from '../envs/generate.ts';
import { encodePng } from '../core/image.ts';
import type { ModalitySetting } from '../core/episode.ts';

const ACTIONS = 10;
const BATCH = 200;

async function episodesPerSecond(modality: ModalitySetting): Promise<number> {
  let seed = 0;
  return opsPerSecond(() => {
    const episodes = generateEpisodes(shellEnv, {
      n: BATCH,
      actions: ACTIONS,
      split: 'train',
      seed: seed++,
      modality,
      imageRatio: 0.5,
    });
    for (const episode of episodes) {
      shellEnv.prompt(episode, { style: 'cot', shots: [] });
      episode.actions.forEach((action, i) => {
        if (action.modality === 'image') shellEnv.renderAction(episode, i, shellEnv.imageSizes.model);
      });
    }
    return episodes.length;
  });
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const modality of ['text', 'image', 'mixed'] as const) {
    rows.push({
      group: 'shell episodes',
      name: `${modality} (T=${ACTIONS}, prompt + ${shellEnv.imageSizes.model}px images)`,
      value: await episodesPerSecond(modality),
      unit: 'episodes/s',
    });
  }
  const [episode] = generateEpisodes(shellEnv, { n: 1, actions: 30, split: 'train', seed: 1, modality: 'image' });
  for (const size of [shellEnv.imageSizes.chat, shellEnv.imageSizes.model]) {
    const value = await opsPerSecond(() => {
      episode.actions.forEach((_, i) => shellEnv.renderAction(episode, i, size));
      return episode.actions.length;
    });
    rows.push({ group: 'shell render', name: `image actions @${size}px (raw RGB)`, value, unit: 'actions/s' });
  }
  for (const size of [shellEnv.imageSizes.chat, shellEnv.imageSizes.model]) {
    const value = await opsPerSecond(async () => {
      for (let i = 0; i < 10; i++) await encodePng(shellEnv.renderAction(episode, i, size));
      return 10;
    });
    rows.push({
      group: 'shell render',
      name: `image actions @${size}px as PNG`,
      value,
      unit: 'actions/s',
      note: 'dataset export caches PNGs by content',
    });
  }
  return rows;
}
