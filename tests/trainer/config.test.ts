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
});
