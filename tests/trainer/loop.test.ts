// The training loop on test doubles (tiny policy and environment): the run folder it writes, and that an interrupted
// run resumed from its checkpoint reproduces the uninterrupted run's metrics exactly.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, existsSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { train } from '../../trainer/loop.ts';
import { resolveConfig } from '../../trainer/config.ts';
import { ToyPolicy, toyAdapterStore, toyEnv, toyEncode } from './toy.ts';

const config = resolveConfig({}, {
  trainSize: 12, actions: 1, testSize: 10, steps: 6, promptsPerStep: 2, groupSize: 4, gradientAccumulation: 2,
  iterations: 2, evalEvery: 3, checkpointEvery: 2, maxCompletionTokens: 3, learningRate: 0.05, samplesPerStep: 2,
});

function run(runDir: string, options: { resume?: boolean; stopAfterStep?: number } = {}) {
  const policy = new ToyPolicy(1);
  return train({ env: toyEnv, policy, adapter: toyAdapterStore(policy), encodeEpisode: toyEncode(policy), config, modality: 'text', runDir, resume: options.resume ?? false, stopAfterStep: options.stopAfterStep });
}

/** Metrics without the wall-clock fields, which differ between any two runs. */
function comparable(runDir: string) {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => {
    const { time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest } = JSON.parse(l);
    return rest;
  });
}

describe('training loop', () => {
  it('writes train rows, eval rows for both modalities, samples and checkpoints', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-loop-'));
    await run(dir);
    const rows = comparable(dir);
    expect(rows.filter((r) => r.type === 'train').map((r) => r.step)).toEqual([1, 2, 3, 4, 5, 6]);
    const evals = rows.filter((r) => r.type === 'eval');
    expect(evals.map((r) => `${r.step}:${r.modality}:${r.role}`)).toEqual(['0:text:train', '0:image:transfer', '3:text:train', '3:image:transfer', '6:text:train', '6:image:transfer']);
    for (const e of evals) expect(e.high).toBeGreaterThanOrEqual(e.low);
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

  it('refuses --resume without a checkpoint and a second run into the same folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-empty-'));
    await expect(run(dir, { resume: true })).rejects.toThrow(/no checkpoint/);
    await run(dir, { stopAfterStep: 1 });
    await expect(run(dir)).rejects.toThrow(/already holds a run/);
  });
});
