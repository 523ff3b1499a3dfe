// `metrl train` on the ONNX Runtime engine with two sessions (--threads 2: rollouts, reference and old-policy
// log-probs and the learner spread over the main thread and a worker, models/onnx/builtin/worker-pool.ts) against one session
// (--threads 1): the same samples, the same metrics to float rounding and the same trained adapters. β > 0 and μ = 2,
// so the reference pass, the old-policy pass and two learner passes all take the parallel path (METRL_ORT_SPLIT=always:
// the tiny model is below the work that a split otherwise needs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../models/backend.ts';
import { loadTrainingPolicy, train } from '../../../trainer/grpo/loop.ts';
import { resolveConfig } from '../../../trainer/config.ts';
import { boxesEnv } from '../../../envs/boxes/index.ts';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';
import { TINY_ARCHITECTURE, tinyBaseCheckpoint } from '../tiny-base.ts';

const base = tinyBaseCheckpoint(
  BuiltinPolicy.create({ architecture: { ...TINY_ARCHITECTURE, maxContext: 512 }, seed: 1 }),
);

async function run(threads: number) {
  const config = resolveConfig(
    {},
    {
      trainSize: 8,
      actions: 2,
      testSize: 2,
      steps: 3,
      promptsPerStep: 2,
      groupSize: 4,
      gradientAccumulation: 2,
      numIterations: 2,
      evalEvery: 3,
      checkpointEvery: 3,
      maxCompletionTokens: 6,
      learningRate: 0.02,
      beta: 0.04,
      temperature: 1,
      engine: 'ort',
    },
  );
  const setup = await loadTrainingPolicy(base, config);
  const dir = mkdtempSync(join(tmpdir(), `metrl-ort-threads-${threads}-`));
  const rewards = [
    {
      name: 'length',
      source: 'test',
      compute: ({ completion }: { completion: string }) =>
        [...completion].reduce((s, c) => s + (c.charCodeAt(0) % 3), 0),
    },
  ];
  await train({
    env: boxesEnv,
    ...setup,
    config,
    modality: 'text',
    runDir: dir,
    resume: false,
    rewards,
    ort: { threads },
  });
  const lines = (file: string) =>
    readFileSync(join(dir, file), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  const rows = lines('metrics.jsonl').filter((r) => r.type === 'train');
  const samples = lines('samples.jsonl');
  const adapter = readFileSync(join(dir, 'checkpoints', 'step-3', 'adapter_model.safetensors'));
  return { rows, samples, adapter };
}

beforeAll(async () => {
  await initBackend('wasm', null);
  process.env.METRL_ORT_SPLIT = 'always';
});
afterAll(() => {
  delete process.env.METRL_ORT_SPLIT;
});

describe('train on the ORT engine with --threads 2', () => {
  it('gives the one-session run: samples, metrics and adapters', async () => {
    const one = await run(1);
    const two = await run(2);
    expect(two.samples).toEqual(one.samples);
    expect(two.rows.map((r) => r.step)).toEqual([1, 2, 3]);
    two.rows.forEach((row, i) => {
      const want = one.rows[i];
      expect(Object.keys(row).sort()).toEqual(Object.keys(want).sort());
      for (const key of ['rewardMean', 'completionLength']) expect(row[key]).toBe(want[key]);
      for (const key of ['loss', 'gradNorm', 'entropy', 'kl'])
        expect(Math.abs(row[key] - want[key])).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want[key])));
    });
    // The KL term is live (β > 0 after the first update) and something was learnt.
    expect(one.rows.some((r) => r.kl > 0)).toBe(true);
    expect(one.rows.some((r) => r.gradNorm > 1e-3)).toBe(true);
    const floats = (b: Buffer) => {
      const h = Number(b.readBigUInt64LE(0));
      const d = b.subarray(8 + h);
      return new Float32Array(d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength));
    };
    const [a, b] = [floats(two.adapter), floats(one.adapter)];
    expect(a.length).toBe(b.length);
    a.forEach((x, i) => expect(Math.abs(x - b[i])).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(b[i]))));
  }, 180_000);
});
