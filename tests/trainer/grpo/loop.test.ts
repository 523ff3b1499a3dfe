// The training loop with a tiny built-in policy on the shell game: the run folder it writes, and that an interrupted
// run resumed from its checkpoint reproduces the uninterrupted run's metrics exactly.
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../models/backend.ts';
import * as tf from '@tensorflow/tfjs';
import { mkdtempSync, readFileSync, existsSync, appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTrainingPolicy, train } from '../../../trainer/grpo/loop.ts';
import { resolveConfig } from '../../../trainer/config.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import { tinyBaseCheckpoint } from '../tiny-base.ts';
import { chunksWithin } from '../../../trainer/chunks.ts';

const base = tinyBaseCheckpoint();

const config = resolveConfig(
  {},
  {
    trainSize: 12,
    actions: 2,
    testSize: 6,
    steps: 6,
    promptsPerStep: 2,
    groupSize: 4,
    gradientAccumulation: 2,
    iterations: 2,
    evalEvery: 3,
    checkpointEvery: 2,
    maxCompletionTokens: 3,
    learningRate: 0.05,
    samplesPerStep: 2,
  },
);

async function run(runDir: string, options: { resume?: boolean; stopAfterStep?: number } = {}) {
  const setup = await loadTrainingPolicy(base, config);
  return train({
    env: shellEnv,
    ...setup,
    config,
    modality: 'image',
    runDir,
    resume: options.resume ?? false,
    stopAfterStep: options.stopAfterStep,
  });
}

/** Metrics without the wall-clock fields, which differ between any two runs. */
function comparable(runDir: string) {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const { time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest } = JSON.parse(l);
      if (rest.trl) delete rest.trl.step_time; // TRL's step_time: seconds too
      return rest;
    });
}

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('training loop', () => {
  it('writes train rows, eval rows for both modalities, samples and checkpoints', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-loop-'));
    await run(dir);
    const rows = comparable(dir);
    expect(rows.filter((r) => r.type === 'train').map((r) => r.step)).toEqual([1, 2, 3, 4, 5, 6]);
    const evals = rows.filter((r) => r.type === 'eval');
    expect(evals.map((r) => `${r.step}:${r.modality}:${r.role}`)).toEqual([
      '0:image:train',
      '0:text:transfer',
      '3:image:train',
      '3:text:transfer',
      '6:image:train',
      '6:text:transfer',
    ]);
    for (const e of evals) expect(e.high).toBeGreaterThanOrEqual(e.low);
    // Game Start on the same test split, once: for the shell game, the share of episodes whose ball ends where it began.
    const baselines = rows.filter((r) => r.type === 'baseline');
    expect(baselines).toHaveLength(1);
    expect(baselines[0].n).toBe(evals[0].n);
    expect(baselines[0].accuracy).toBeGreaterThanOrEqual(0);
    expect(baselines[0].accuracy).toBeLessThanOrEqual(1);
    expect(existsSync(join(dir, 'checkpoints', 'step-6', 'optimizer.safetensors'))).toBe(true);
    expect(readFileSync(join(dir, 'checkpoints', 'latest'), 'utf8').trim()).toBe('step-6');
    expect(readFileSync(join(dir, 'samples.jsonl'), 'utf8').trim().split('\n')).toHaveLength(12);
  });

  it('resumes after an interruption and reaches the same metrics as an uninterrupted run', async () => {
    const whole = mkdtempSync(join(tmpdir(), 'metrl-whole-'));
    await run(whole);
    const cut = mkdtempSync(join(tmpdir(), 'metrl-cut-'));
    await run(cut, { stopAfterStep: 3 }); // checkpoint at step 3 (stop), metrics up to step 3
    // Simulate a kill mid-write: a torn line after the checkpoint.
    appendFileSync(join(cut, 'metrics.jsonl'), '{"type":"train","step":4,"rewa');
    await run(cut, { resume: true });
    expect(comparable(cut)).toEqual(comparable(whole));
    expect(readFileSync(join(cut, 'samples.jsonl'), 'utf8')).toBe(readFileSync(join(whole, 'samples.jsonl'), 'utf8'));
  });

  it('gives the same update whatever the learner chunk size (it only bounds memory)', async () => {
    const adapters = [];
    // By sequence count (3 or 16 per pass) and by a token budget so small that every sequence gets a pass of its own.
    for (const [learnerBatch, learnerTokens] of [
      [3, 2048],
      [16, 2048],
      [16, 1],
    ]) {
      const dir = mkdtempSync(join(tmpdir(), 'metrl-chunks-'));
      const cfg = { ...config, steps: 1, learnerBatch, learnerTokens, iterations: 1, numIterations: 1 };
      const setup = await loadTrainingPolicy(base, cfg);
      await train({ env: shellEnv, ...setup, config: cfg, modality: 'image', runDir: dir, resume: false });
      adapters.push(setup.policy.trainableVariables('lora').map((v) => Array.from(v.dataSync())));
    }
    const [a, ...others] = adapters;
    for (const b of others) {
      let largest = 0;
      a.forEach((values, i) => values.forEach((x, j) => (largest = Math.max(largest, Math.abs(x - b[i][j])))));
      expect(largest).toBeLessThan(1e-5);
    }
  });

  it('skips updates with a non-finite loss, logs them, and stops after several in a row', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-nan-'));
    const setup = await loadTrainingPolicy(base, config);
    const [first] = setup.policy.trainableVariables('lora');
    first.assign(tf.fill(first.shape, NaN));
    await expect(
      train({ env: shellEnv, ...setup, config, modality: 'image', runDir: dir, resume: false }),
    ).rejects.toThrow(/loss was not finite for 3 steps in a row \(steps 1-3; updates skipped\)/);
    const rows = comparable(dir).filter((r) => r.type === 'train');
    expect(rows.map((r) => [r.step, r.updated, r.loss])).toEqual([
      [1, false, null],
      [2, false, null],
      [3, false, null],
    ]);
  });

  it('refuses a second run into the same folder, and --resume when training rows have lost their checkpoints', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-empty-'));
    await run(dir, { stopAfterStep: 1 });
    await expect(run(dir)).rejects.toThrow(/already holds a run/);
    rmSync(join(dir, 'checkpoints'), { recursive: true });
    await expect(run(dir, { resume: true })).rejects.toThrow(/has training steps but .* holds no checkpoint/);
  });

  describe('resumes from any moment', () => {
    let whole = '';
    beforeAll(async () => {
      whole = mkdtempSync(join(tmpdir(), 'metrl-whole0-'));
      await run(whole);
    });

    it('stopped before anything was written: --resume starts it from the beginning', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'metrl-nothing-'));
      await run(dir, { resume: true });
      expect(comparable(dir)).toEqual(comparable(whole));
    });

    it('stopped during the step-0 evaluation: the finished modality is kept, the other evaluated, the run completed', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'metrl-eval0-'));
      await run(dir, { stopAfterStep: 0 });
      expect(readFileSync(join(dir, 'checkpoints', 'latest'), 'utf8').trim()).toBe('step-0');
      // As a kill after the trained modality's row: drop the transfer row, and mark the kept one to see it survive.
      const lines = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((r) => `${r.type}:${r.modality ?? ''}`)).toEqual(['baseline:', 'eval:image', 'eval:text']);
      lines[1].seconds = 12345;
      writeFileSync(
        join(dir, 'metrics.jsonl'),
        lines
          .slice(0, 2)
          .map((r) => JSON.stringify(r) + '\n')
          .join(''),
      );
      await run(dir, { resume: true });
      expect(comparable(dir)).toEqual(comparable(whole));
      const rows = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(rows.filter((r) => r.type === 'eval' && r.step === 0).map((r) => r.seconds === 12345)).toEqual([
        true,
        false,
      ]);
    });

    it('stopped after the step-0 checkpoint, before the baseline: --resume completes the run', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'metrl-ckpt0-'));
      await run(dir, { stopAfterStep: 0 });
      writeFileSync(join(dir, 'metrics.jsonl'), '');
      await run(dir, { resume: true });
      expect(comparable(dir)).toEqual(comparable(whole));
    });
  });
});

describe('learner chunks', () => {
  it('hold at most maxItems items and maxSize in total, an oversized item alone, order kept', () => {
    const sizes = [5, 5, 5, 20, 1, 1, 1, 1];
    const got = chunksWithin(sizes, (s) => s, 3, 10);
    expect(got).toEqual([[5, 5], [5], [20], [1, 1, 1], [1]]);
    expect(got.flat()).toEqual(sizes);
  });
});
