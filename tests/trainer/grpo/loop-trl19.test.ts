// TRL 1.9's newer GRPO options wired into train(), with a tiny built-in policy on the shell game: each new loss type
// runs and logs its TRL keys, the entropy bonus trains through the entropy on tfjs (adaptive control moving its
// coefficient update by update) and is refused on the ONNX Runtime learner before anything is written, and GDPO's
// aggregation changes the advantages of a two-reward run.
import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../models/backend.ts';
import { loadTrainingPolicy, train } from '../../../trainer/grpo/loop.ts';
import { resolveConfig, type TrainConfig } from '../../../trainer/config.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import { boxesEnv } from '../../../envs/boxes/index.ts';
import type { Env } from '../../../envs/env.ts';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';
import { TINY_ARCHITECTURE, tinyBaseCheckpoint } from '../tiny-base.ts';

const base = tinyBaseCheckpoint(
  BuiltinPolicy.create({ architecture: { ...TINY_ARCHITECTURE, maxContext: 512 }, seed: 1 }),
);

const tinyConfig = (overrides: Record<string, unknown> = {}): TrainConfig =>
  resolveConfig(
    {},
    {
      trainSize: 12,
      actions: 2,
      testSize: 4,
      steps: 3,
      promptsPerStep: 2,
      groupSize: 4,
      gradientAccumulation: 1,
      evalEvery: 10,
      checkpointEvery: 10,
      maxCompletionTokens: 3,
      learningRate: 0.05,
      samplesPerStep: 8,
      temperature: 1,
      ...overrides,
    },
  );

async function runTiny(config: TrainConfig, env: Env = shellEnv) {
  const dir = mkdtempSync(join(tmpdir(), 'metrl-trl19-'));
  const setup = await loadTrainingPolicy(base, config);
  await train({ env, ...setup, config, modality: 'text', runDir: dir, resume: false });
  return dir;
}

const trainRows = (dir: string) =>
  readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.type === 'train');
const samples = (dir: string) =>
  readFileSync(join(dir, 'samples.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('train() with the new loss types', () => {
  const cases: [string, Record<string, unknown>, string[], string[]][] = [
    ['cispo', { lossType: 'cispo', epsilonHigh: 5, numIterations: 2 }, ['cispo_clip_ratio'], ['clip_ratio/low_mean']],
    ['sapo', { lossType: 'sapo', numIterations: 2 }, [], ['clip_ratio/low_mean']],
    [
      'luspo',
      { lossType: 'luspo', importanceSamplingLevel: 'sequence', delta: 3, numIterations: 2 },
      ['clip_ratio/low_min', 'clip_ratio/high_max'],
      [],
    ],
    [
      'vespo',
      { lossType: 'vespo', offPolicyMaskThreshold: 0.5, useBiasCorrectionKl: true, numIterations: 2 },
      ['vespo/phi_seq_mean'],
      ['clip_ratio/region_mean'],
    ],
  ];
  for (const [name, overrides, present, absent] of cases) {
    it(`${name}: finite losses, updates, its TRL keys and TRL 1.9's step_time and num_tokens`, async () => {
      const rows = trainRows(await runTiny(tinyConfig(overrides)));
      expect(rows).toHaveLength(3);
      let tokens = 0;
      for (const row of rows) {
        expect(row.updated).toBe(true);
        expect(Number.isFinite(row.loss)).toBe(true);
        for (const key of present) expect(row.trl[key], key).toEqual(expect.any(Number));
        for (const key of absent) expect(key in row.trl, key).toBe(false);
        expect(row.trl['step_time']).toBeGreaterThan(0);
        // Every completion drawn, with its prompt: the count only grows.
        expect(row.trl['num_tokens']).toBeGreaterThan(tokens);
        tokens = row.trl['num_tokens'];
      }
      if (name === 'vespo') expect(rows[0].trl['vespo/phi_seq_mean']).toBeCloseTo(1, 5); // μ pass 1 is on-policy: φ(1) = 1 (averaged with pass 2)
    }, 120_000);
  }
});

describe('train() with an entropy bonus', () => {
  it('on tfjs: adaptive control moves entropy_coef by δ after each update, and the bonus changes the update', async () => {
    const common = { engine: 'tfjs', seed: 3 };
    const adaptive = trainRows(
      await runTiny(
        tinyConfig({
          ...common,
          entropyCoef: 0.5,
          useAdaptiveEntropy: true,
          entropyTarget: 100,
          entropyCoefDelta: 0.25,
          entropyCoefMax: 2,
        }),
      ),
    );
    // The entropy is always below the target 100: c = 0.5 → 0.75 → 1.0 → 1.25, logged after each step's update.
    expect(adaptive.map((r) => r.trl['entropy_coef'])).toEqual([0.75, 1.0, 1.25]);
    // Step 1 applies no bonus (no measurement yet), so its policy_loss is its loss; step 2 applies c = 0.75.
    expect(adaptive[0].trl['policy_loss']).toBeCloseTo(adaptive[0].loss, 6);
    expect(adaptive[1].trl['policy_loss'] - adaptive[1].loss).toBeCloseTo(0.75 * adaptive[1].entropy, 3);
    const plain = trainRows(await runTiny(tinyConfig(common)));
    expect(adaptive[0].gradNorm).toBeCloseTo(plain[0].gradNorm, 5);
    // From step 2 the bonus's gradient (through the entropy) moves the adapters differently.
    expect(Math.abs(adaptive[1].gradNorm - plain[1].gradNorm)).toBeGreaterThan(1e-4);
  }, 120_000);

  it('on tfjs: the same update whatever the learner chunking (the checkpointed scoring path carries the entropy’s gradient)', async () => {
    // 16 completions a step: learnerBatch 16 scores them in one call, which the built-in model splits into two
    // checkpointed chunks (recomputed in the backward pass); learnerBatch 4 scores one group a call, directly.
    const common = { engine: 'tfjs', seed: 5, promptsPerStep: 4, entropyCoef: 0.5 };
    const whole = trainRows(await runTiny(tinyConfig({ ...common, learnerBatch: 16 })));
    const apart = trainRows(await runTiny(tinyConfig({ ...common, learnerBatch: 4 })));
    whole.forEach((row, i) => {
      expect(row.rewardMean).toBe(apart[i].rewardMean);
      expect(Math.abs(row.gradNorm - apart[i].gradNorm)).toBeLessThan(1e-5 * apart[i].gradNorm);
    });
  }, 180_000);

  it('on the ONNX Runtime learner: refused in one line, nothing written', async () => {
    const config = tinyConfig({ engine: 'ort', entropyCoef: 0.01 });
    const dir = mkdtempSync(join(tmpdir(), 'metrl-trl19-'));
    const setup = await loadTrainingPolicy(base, config);
    await expect(
      train({ env: shellEnv, ...setup, config, modality: 'text', runDir: dir, resume: false }),
    ).rejects.toThrow(
      '--entropy-coef / --use-adaptive-entropy: the ONNX Runtime learner does not differentiate the entropy; add --engine tfjs',
    );
    expect(existsSync(join(dir, 'metrics.jsonl'))).toBe(false);
  }, 120_000);
});

describe('train() with two rewards', () => {
  it('normalize_then_sum gives other advantages than sum_then_normalize from the same rollouts', async () => {
    const reward = ['domain', 'format'];
    const summed = samples(
      await runTiny(tinyConfig({ reward, rewardWeights: [1, 0.5], steps: 1, maxCompletionTokens: 8 }), boxesEnv),
    );
    const gdpo = samples(
      await runTiny(
        tinyConfig({
          reward,
          rewardWeights: [1, 0.5],
          steps: 1,
          maxCompletionTokens: 8,
          multiObjectiveAggregation: 'normalize_then_sum',
        }),
        boxesEnv,
      ),
    );
    // Same rollouts and rewards (the first update comes after them), different advantages where there was a spread.
    expect(gdpo.map((s) => s.completion)).toEqual(summed.map((s) => s.completion));
    expect(gdpo.map((s) => s.reward)).toEqual(summed.map((s) => s.reward));
    const spread = summed.some((s) => s.advantage !== 0);
    if (spread) expect(gdpo.map((s) => s.advantage)).not.toEqual(summed.map((s) => s.advantage));
    // GDPO's step-wide normalisation: the advantages have mean 0 over the step.
    expect(gdpo.reduce((s, r) => s + r.advantage, 0)).toBeCloseTo(0, 4);
  }, 120_000);
});
