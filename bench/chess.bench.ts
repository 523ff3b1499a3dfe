// Chess speed: episodes per second for text, image and mixed actions (sample the episode from the synthetic games,
// build its chat prompt and render every image action at the built-in model's size, as a training rollout does),
// episodes per second from a games file, image actions rendered per second at both sizes (raw RGB, what the built-in
// model reads) and PNG encodes per second (what datasets and chat requests need).
import { join } from 'node:path';
import type { BenchRow } from './table.ts';
import { chessEnv } from '../envs/chess/index.ts';
import { generateEpisodes } from '../envs/generate.ts';
import { encodePng } from '../core/image.ts';
import { SHARED_DIR } from '../core/paths.ts';
import type { Episode, ModalitySetting } from '../core/episode.ts';

const ACTIONS = 10;

/**
 * Like opsPerSecond, but also per second of this process's CPU time: on a shared machine (other jobs on the same
 * cores) the wall-clock rate understates what the code does, the CPU-time rate does not.
 */
async function rates(fn: () => number | Promise<number>, minMs = 1500): Promise<{ wall: number; cpu: number }> {
  await fn();
  let ops = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  while (performance.now() - start < minMs) ops += await fn();
  const wallSeconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { wall: ops / wallSeconds, cpu: ops / ((cpu.user + cpu.system) / 1e6) };
}

const cpuNote = (r: { cpu: number }, extra = '') => `${extra}${extra ? '; ' : ''}${Math.round(r.cpu)}/s per CPU-second`;
const BATCH = 20;

async function episodesPerSecond(
  modality: ModalitySetting,
  extra: Record<string, unknown> = {},
): Promise<{ wall: number; cpu: number }> {
  let seed = 0;
  return rates(() => {
    const episodes = generateEpisodes(chessEnv, {
      n: BATCH,
      actions: ACTIONS,
      split: 'train',
      seed: seed++,
      modality,
      imageRatio: 0.5,
      extra,
    });
    for (const episode of episodes) {
      chessEnv.prompt(episode, { style: 'cot', shots: [] });
      episode.actions.forEach((action, i) => {
        if (action.modality === 'image') chessEnv.renderAction(episode, i, chessEnv.imageSizes.model);
      });
    }
    return episodes.length;
  }, 3000);
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const modality of ['text', 'image', 'mixed'] as const) {
    const r = await episodesPerSecond(modality);
    rows.push({
      group: 'chess episodes',
      name: `${modality} (synthetic games, T=${ACTIONS}, prompt + ${chessEnv.imageSizes.model}px images)`,
      value: r.wall,
      unit: 'episodes/s',
      note: cpuNote(r),
    });
  }
  const games = join(SHARED_DIR, 'data', 'millionbase-sample.uci');
  const fromFile = await episodesPerSecond('text', { games, offset: 'random' });
  rows.push({
    group: 'chess episodes',
    name: `text (games file, random offset, T=${ACTIONS})`,
    value: fromFile.wall,
    unit: 'episodes/s',
    note: cpuNote(fromFile, 'file validated once, then cached'),
  });

  // 200 image actions from varied positions (random offsets), so arrows of every length and direction are timed.
  const episodes: Episode[] = generateEpisodes(chessEnv, {
    n: 20,
    actions: ACTIONS,
    split: 'train',
    seed: 1,
    modality: 'image',
    extra: { offset: 'random' },
  });
  const renderAll = (size: number) => {
    let n = 0;
    for (const episode of episodes) episode.actions.forEach((_, i) => (chessEnv.renderAction(episode, i, size), n++));
    return n;
  };
  const targets: Record<number, string> = {
    [chessEnv.imageSizes.chat]: 'target ≥ 500',
    [chessEnv.imageSizes.model]: 'target ≥ 2,000',
  };
  for (const size of [chessEnv.imageSizes.chat, chessEnv.imageSizes.model]) {
    const r = await rates(() => renderAll(size));
    rows.push({
      group: 'chess render',
      name: `image actions @${size}px (raw RGB)`,
      value: r.wall,
      unit: 'actions/s',
      note: cpuNote(r, targets[size]),
    });
  }
  for (const size of [chessEnv.imageSizes.chat, chessEnv.imageSizes.model]) {
    const images = episodes.flatMap((e) => e.actions.map((_, i) => chessEnv.renderAction(e, i, size))).slice(0, 40);
    const r = await rates(async () => {
      for (const image of images) await encodePng(image);
      return images.length;
    });
    rows.push({
      group: 'chess render',
      name: `PNG encodes @${size}px (encoding only)`,
      value: r.wall,
      unit: 'images/s',
      note: 'sharp encodes on its own threads',
    });
  }
  return rows;
}
