import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readConfigFile, resolveConfig, completionsPerStep } from '../../trainer/config.ts';
import { UserError } from '../../core/errors.ts';

describe('training config', () => {
  it("has the paper's defaults where they apply", () => {
    const c = resolveConfig({}, {});
    expect(c.groupSize).toBe(8);
    expect(c.promptsPerStep).toBe(4);
    expect(c.trainSize).toBe(100);
    expect(c.actions).toBe(5);
    expect(c.loraRank).toBe(16);
    expect(c.lossType).toBe('grpo');
    expect(completionsPerStep(c)).toBe(4 * c.gradientAccumulation * 8);
  });

  it('lets flags override the file', () => {
    const c = resolveConfig({ groupSize: 4, beta: 0.1 }, { groupSize: 6, beta: undefined });
    expect(c.groupSize).toBe(6);
    expect(c.beta).toBe(0.1);
  });

  it('rejects unknown keys and out-of-range values with one line naming the field', () => {
    expect(() => resolveConfig({ grupSize: 8 }, {})).toThrow(UserError);
    expect(() => resolveConfig({ grupSize: 8 }, {})).toThrow(/grupSize/);
    expect(() => resolveConfig({ groupSize: 1 }, {})).toThrow(/groupSize: group size must be at least 2/);
    expect(() => resolveConfig({}, { learningRate: -1e-3 })).toThrow(/learningRate/);
    expect(() => resolveConfig({}, { lossType: 'ppo' })).toThrow(/lossType/);
    expect(() => resolveConfig({}, { epsilon: 1.5 })).toThrow(/epsilon/);
  });

  it('reads JSON files and names a broken one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-config-'));
    writeFileSync(join(dir, 'ok.json'), JSON.stringify({ steps: 5 }));
    writeFileSync(join(dir, 'bad.json'), '{ steps: 5');
    expect(readConfigFile(join(dir, 'ok.json'))).toEqual({ steps: 5 });
    expect(() => readConfigFile(join(dir, 'bad.json'))).toThrow(/not valid JSON/);
    expect(() => readConfigFile(join(dir, 'missing.json'))).toThrow(/no such file/);
  });

  it("has TRL's option names with the earlier loss's behaviour as defaults", () => {
    const c = resolveConfig({}, {});
    expect(c).toMatchObject({
      lossType: 'grpo',
      importanceSamplingLevel: 'token',
      epsilon: 0.2,
      scaleRewards: 'group',
      numIterations: 1,
      iterations: 1,
      maskTruncatedCompletions: false,
      topEntropyQuantile: 1,
      dynamicSampling: false,
      reward: ['domain'],
    });
    expect(c.epsilonHigh).toBeUndefined();
    expect(c.rewardWeights).toBeUndefined();
  });

  it('still reads the old names and forms: iterations, dr-grpo, boolean scaleRewards', () => {
    const c = resolveConfig({ iterations: 2, lossType: 'dr-grpo', scaleRewards: false }, {});
    expect(c).toMatchObject({ numIterations: 2, iterations: 2, lossType: 'dr_grpo', scaleRewards: 'none' });
    expect(resolveConfig({}, { scaleRewards: true }).scaleRewards).toBe('group');
    // A flag under either name overrides the file under both.
    expect(resolveConfig({ numIterations: 3 }, { iterations: 2 })).toMatchObject({ numIterations: 2, iterations: 2 });
    expect(resolveConfig({ iterations: 3 }, { numIterations: 4 })).toMatchObject({ numIterations: 4, iterations: 4 });
    expect(() => resolveConfig({ iterations: 2, numIterations: 3 }, {}, 'run.json: ')).toThrow(
      /^run\.json: numIterations \(3\) and its old name iterations \(2\) disagree; give one$/,
    );
  });

  it('rejects unknown loss types and the combinations TRL warns against, in one line naming the key', () => {
    const message = (input: Record<string, unknown>) => {
      try {
        resolveConfig(input, {});
      } catch (error) {
        expect(error).toBeInstanceOf(UserError);
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(message({ lossType: 'ppo' })).toBe(
      'config: lossType: unknown loss type; expected one of grpo, bnpo, dr_grpo, dapo, cispo, sapo, luspo, vespo (got "ppo")',
    );
    expect(message({ epsilon: 0.2, epsilonHigh: 0.1 })).toBe(
      'config: epsilonHigh: epsilonHigh must be at least epsilon (0.2): clip-higher only widens the upper bound (got 0.1)',
    );
    expect(message({ importanceSamplingLevel: 'sequence', lossType: 'dapo' })).toMatch(
      /^config: importanceSamplingLevel: 'sequence' \(GSPO\) needs lossType 'grpo', 'sapo' or 'luspo': 'dapo' sums per-token terms .* \(got "sequence"\)$/,
    );
    expect(message({ importanceSamplingLevel: 'tokens' })).toMatch(/^config: importanceSamplingLevel: /);
    expect(message({ scaleRewards: 'groups' })).toMatch(/^config: scaleRewards: /);
    expect(message({ topEntropyQuantile: 1.5 })).toMatch(/^config: topEntropyQuantile: /);
    expect(message({ reward: ['domain', 'format'], rewardWeights: [1] })).toMatch(
      /^config: rewardWeights: 1 weights for 2 rewards \(domain, format\)/,
    );
    expect(message({ reward: ['domain', 'domain'] })).toMatch(/^config: reward: domain is given twice/);
    // Accepted: GSPO with grpo, clip-higher, DAPO's recipe.
    expect(message({ importanceSamplingLevel: 'sequence' })).toBe('accepted');
    expect(
      message({
        lossType: 'dapo',
        epsilonHigh: 0.28,
        maskTruncatedCompletions: true,
        dynamicSampling: true,
        scaleRewards: 'batch',
      }),
    ).toBe('accepted');
  });
});
