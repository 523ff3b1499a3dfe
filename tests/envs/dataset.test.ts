// Dataset export in-process: a failure part-way through (here a renderer that breaks on its 12th image) leaves
// nothing behind — no output directory, no temporary directory, no parent directories it created — and an existing
// directory replaced with --force survives such a failure untouched.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeDataset, type DatasetOptions } from '../../envs/dataset.ts';
import { shellEnv } from '../../envs/shell/index.ts';
import type { Env } from '../../envs/env.ts';

function breakingEnv(after: number): Env {
  let calls = 0;
  return {
    ...shellEnv,
    renderAction(episode, index, size) {
      if (++calls > after) throw new Error('renderer broke');
      return shellEnv.renderAction(episode, index, size);
    },
  };
}

const options = (out: string, force = false): DatasetOptions => ({
  n: 10,
  actions: 3,
  split: 'test',
  seed: 0,
  modality: 'image',
  prompt: 'zero-shot',
  shots: 0,
  imageSize: 64,
  out,
  force,
});

describe('writeDataset', () => {
  it('a failure part-way leaves no trace, including parents it created', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-ds-'));
    await expect(writeDataset(breakingEnv(11), options(join(root, 'a', 'b', 'data')))).rejects.toThrow(
      'renderer broke',
    );
    expect(readdirSync(root)).toEqual([]);
  });

  it('a failure with --force leaves the old directory as it was', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-ds-'));
    const out = join(root, 'data');
    mkdirSync(out);
    writeFileSync(join(out, 'old.txt'), 'keep');
    await expect(writeDataset(breakingEnv(11), options(out, true))).rejects.toThrow('renderer broke');
    expect(readdirSync(root)).toEqual(['data']);
    expect(readdirSync(out)).toEqual(['old.txt']);
  });

  it('succeeds with the same settings when nothing breaks', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-ds-'));
    const result = await writeDataset(shellEnv, options(join(root, 'data')));
    expect(result).toMatchObject({ rows: 10, images: 30 });
    expect(existsSync(join(root, 'data', 'metadata.jsonl'))).toBe(true);
    expect(readdirSync(root)).toEqual(['data']);
  });
});
