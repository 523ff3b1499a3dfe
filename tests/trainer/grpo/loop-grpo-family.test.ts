// The GRPO family wired into train(), with a tiny built-in policy on the shell game: dynamic sampling's rounds and
// tally, reward modules as the rewards GRPO optimises (and a throwing one stopping the run before any update), and the
// objective's options (GSPO, bnpo, the top-entropy mask with its step-wide threshold) giving the same update whatever
// the learner's memory chunking.
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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

// Room for a boxes prompt (about 310 tokens with two actions).
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
      gradientAccumulation: 2,
      evalEvery: 10,
      checkpointEvery: 10,
      maxCompletionTokens: 3,
      learningRate: 0.05,
      samplesPerStep: 8,
      temperature: 1,
      ...overrides,
    },
  );

/**
 * A tiny run. The shell prompts ask for a trace, whose score reads the text after the last "FINAL ANSWER" (none in a
 * three-token completion: every reward module would see ''); boxes asks for the answer alone, so a module sees it all.
 */
async function runTiny(config: TrainConfig, env: Env = shellEnv) {
  const dir = mkdtempSync(join(tmpdir(), 'metrl-family-'));
  const setup = await loadTrainingPolicy(base, config);
  await train({ env, ...setup, config, modality: 'text', runDir: dir, resume: false });
  return { dir, policy: setup.policy };
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

describe('train() with dynamic sampling', () => {
  it('trains only on groups with a reward spread, draws more prompts for the dropped ones, and logs the tally', async () => {
    const config = tinyConfig({ dynamicSampling: true, dynamicSamplingMaxDraws: 2 });
    const { dir } = await runTiny(config);
    const rows = trainRows(dir);
    expect(rows).toHaveLength(3);
    const target = config.promptsPerStep * config.gradientAccumulation;
    let dropped = 0;
    for (const { trl, groups, zeroSpreadGroups, updated } of rows) {
      const t = (k: string) => trl[`dynamic_sampling/${k}`];
      // Every drawn group is counted once: kept, dropped for zero spread, or beyond the target.
      expect(t('drawn')).toBe(groups);
      expect(t('dropped')).toBe(zeroSpreadGroups);
      expect(t('kept') + t('dropped') + t('surplus')).toBe(t('drawn'));
      expect(t('kept')).toBeLessThanOrEqual(target);
      expect(t('extraDraws')).toBeLessThanOrEqual(2);
      // Short of the target only when the extra draws ran out; no update without a kept group.
      if (t('kept') < target) expect(t('extraDraws')).toBe(2);
      expect(updated).toBe(t('kept') > 0);
      if (t('extraDraws') > 0) expect(t('drawn')).toBeGreaterThan(target);
      dropped += t('dropped');
    }
    // The tiny model's three-token answers are mostly all wrong together: the filter had work to do.
    expect(dropped).toBeGreaterThan(0);
  });
});

describe('train() with reward modules', () => {
  it('optimises the weighted sum of the rewards and logs each under its name', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-reward-mod-'));
    const module = join(root, 'length.ts');
    writeFileSync(module, 'export function length(completion: string): number {\n  return completion.length;\n}\n');
    const config = tinyConfig({ steps: 1, reward: ['domain', module], rewardWeights: [1, 0.5] });
    const { dir, policy } = await runTiny(config, boxesEnv);
    const rows = samples(dir);
    expect(rows.length).toBeGreaterThan(0);
    for (const s of rows) {
      const response = policy.responseOf(boxesEnv, s.completion);
      expect(response.length).toBeGreaterThan(0);
      const domain = boxesEnv.score({ target: s.target, response }).reward;
      expect(s.reward).toBeCloseTo(domain + 0.5 * response.length, 12);
    }
    const [{ trl }] = trainRows(dir);
    expect(Object.keys(trl)).toEqual(
      expect.arrayContaining(['rewards/domain/mean', 'rewards/length/mean', 'rewards/length/std']),
    );
    expect(trl['reward']).toBeCloseTo(trl['rewards/domain/mean'] + 0.5 * trl['rewards/length/mean'], 12);
  });

  it('stops with one line naming the module and the episode when a reward throws, before any update', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-reward-throw-'));
    const module = join(root, 'broken.ts');
    writeFileSync(module, "export default function (): number {\n  throw new Error('no judge today');\n}\n");
    const config = tinyConfig({ steps: 1, reward: [module] });
    const dir = mkdtempSync(join(tmpdir(), 'metrl-family-'));
    const setup = await loadTrainingPolicy(base, config);
    const before = setup.policy.trainableVariables('lora').map((v) => Array.from(v.dataSync()));
    await expect(
      train({ env: shellEnv, ...setup, config, modality: 'text', runDir: dir, resume: false }),
    ).rejects.toThrow(/--reward .*broken\.ts: threw on episode shell-train-\S+: no judge today/);
    expect(trainRows(dir)).toHaveLength(0);
    expect(setup.policy.trainableVariables('lora').map((v) => Array.from(v.dataSync()))).toEqual(before);
  });
});

describe('train() objective options', () => {
  // The step-wide divisors and the pooled entropy threshold make the summed chunk gradients the full-batch gradient.
  // A reward that differs between any two different completions gives every group a spread, so the update moves.
  const spread = join(mkdtempSync(join(tmpdir(), 'metrl-spread-')), 'spread.ts');
  writeFileSync(
    spread,
    'export default (completion: string): number => [...completion].reduce((s, ch) => s + ch.charCodeAt(0), 0) % 7;\n',
  );
  // One pass each: with μ > 1, Adam's first steps turn float noise in near-zero gradients (which the chunking changes)
  // into full-size steps, and the second pass drifts by ~1e-4 (grpo included). The top-entropy mask is step-wide, but
  // tied entropies at the threshold (a group's first tokens share their prompt) can still flip in float noise.
  for (const [name, overrides] of [
    ['GSPO with the top-entropy mask', { importanceSamplingLevel: 'sequence', topEntropyQuantile: 0.5 }],
    ['dapo with clip-higher', { lossType: 'dapo', epsilonHigh: 0.28 }],
    ['bnpo', { lossType: 'bnpo' }],
  ] as const) {
    it(`${name}: the same update whatever the learner chunk size`, async () => {
      const adapters: number[][][] = [];
      for (const [learnerBatch, learnerTokens] of [
        [3, 2048],
        [16, 2048],
        [16, 1],
      ]) {
        const config = tinyConfig({ steps: 1, learnerBatch, learnerTokens, reward: [spread], ...overrides });
        const { policy } = await runTiny(config, boxesEnv);
        adapters.push(policy.trainableVariables('lora').map((v) => Array.from(v.dataSync())));
      }
      const [a, ...others] = adapters;
      let moved = 0;
      for (const b of others) {
        let largest = 0;
        a.forEach((values, i) => values.forEach((x, j) => (largest = Math.max(largest, Math.abs(x - b[i][j])))));
        expect(largest).toBeLessThan(1e-5);
      }
      const fresh = (await loadTrainingPolicy(base, tinyConfig())).policy
        .trainableVariables('lora')
        .map((v) => Array.from(v.dataSync()));
      a.forEach((values, i) => values.forEach((x, j) => (moved = Math.max(moved, Math.abs(x - fresh[i][j])))));
      expect(moved).toBeGreaterThan(1e-4); // the update did something
    });
  }
});
