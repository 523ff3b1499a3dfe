// `metrl train --dataset` on an official MET-Bench set with a train split: Minecraft trains the built-in model on its
// JSON states (the text modality; the screenshots are refused with one line), the run's test split is the harness
// selection, `metrl plot` draws it; a set without train shards is one line and exit 2.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir, expectUserError } from './helpers.ts';
import { PNG, writeMinecraftShard, type MinecraftRow } from '../helpers/metbench-parquet.ts';

function rows(prefix: string, n: number, offset: number): MinecraftRow[] {
  return Array.from({ length: n }, (_, i) => {
    const k = i + offset;
    return {
      example_id: `${prefix}-${i}`,
      initial_state: `{"x": ${k}}`,
      action: 'Walk forward 1 block',
      candidate_states: [1, 2, 3, 4].map((j) => `{"x": ${k + j}}`),
      correct_choice: 1 + (k % 4),
      image_initial_state: PNG(0),
      image_candidate_states: [1, 2, 3, 4].map(PNG),
    };
  });
}

describe('metrl train on an official MET-Bench set', () => {
  it('trains the built-in model on Minecraft JSON states and evaluates it on the test selection', async () => {
    const root = scratchDir('train-official');
    const data = join(root, 'data');
    writeMinecraftShard(join(data, 'full', 'test-00000-of-00001.parquet'), rows('mc-test', 6, 0));
    // The train split repeats the six test tasks (left out) and adds twenty of its own.
    writeMinecraftShard(join(data, 'full', 'train-00000-of-00001.parquet'), [
      ...rows('mc-train', 6, 0),
      ...rows('mc-train-b', 20, 100),
    ]);
    const out = join(root, 'run');
    const tiny = [
      '--steps',
      '2',
      '--prompts-per-step',
      '2',
      '--group-size',
      '2',
      '--eval-every',
      '2',
      '--checkpoint-every',
      '2',
      '--test-size',
      '6',
    ];
    const result = await metrl(['train', '--dataset', data, ...tiny, '--out', out, '--quiet']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const metrics = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const evals = metrics.filter((m) => m.type === 'eval');
    expect(evals.map((m) => [m.step, m.modality, m.n])).toEqual([
      [0, 'text', 6],
      [2, 'text', 6],
    ]);
    expect(metrics.filter((m) => m.type === 'train')).toHaveLength(2);
    const episodes = new Set(
      readFileSync(join(out, 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).episode),
    );
    for (const id of episodes) expect(id).toMatch(/^mc-train-b-/);
    const plot = await metrl(['plot', out, '--out', join(root, 'curves')]);
    expect(plot.code).toBe(0);
    expect(existsSync(join(root, 'curves.svg'))).toBe(true);
    expectUserError(
      await metrl(['train', '--dataset', data, '--modality', 'image', ...tiny, '--out', join(root, 'img')]),
      /the built-in model reads Minecraft's JSON states \(--modality text\)/,
    );
    writeMinecraftShard(join(root, 'testonly', 'full', 'test-00000-of-00001.parquet'), rows('mc-test', 2, 0));
    expectUserError(
      await metrl(['train', '--dataset', join(root, 'testonly'), ...tiny, '--out', join(root, 'none')]),
      /no train shards/,
    );
    expect(existsSync(join(root, 'img'))).toBe(false);
    expect(existsSync(join(root, 'none'))).toBe(false);
    rmSync(root, { recursive: true, force: true });
  });
});
