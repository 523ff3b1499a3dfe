// Rewards users bring: built-in named rewards, TypeScript and JavaScript modules loaded from disk (written to a temp
// folder here), weights, and the one-line errors for every way a module or a reward can be wrong.
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  computeRewards,
  loadRewardFunction,
  loadRewardFunctions,
  parseRewardSpec,
  type RewardInput,
} from '../../../trainer/grpo/reward-functions.ts';
import { UserError } from '../../../core/errors.ts';
import type { Episode } from '../../../core/episode.ts';
import type { Score } from '../../../core/score.ts';

const episode = (id: string, target: string): Episode => ({
  id,
  domain: 'shell',
  split: 'test',
  initialState: '1',
  actions: [],
  target,
  meta: {},
});
const score = (reward: number, valid: boolean): Score => ({
  reward,
  valid,
  prediction: valid ? 'x' : null,
  metrics: {},
});
const inputs: RewardInput[] = [
  { completion: 'FINAL ANSWER: 2', episode: episode('shell-test-aaa', '2'), score: score(1, true) },
  { completion: 'FINAL ANSWER: 3', episode: episode('shell-test-bbb', '2'), score: score(0, true) },
  { completion: 'no idea', episode: episode('shell-test-ccc', '1'), score: score(0, false) },
];

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'metrl-rewards-'));
  const files: Record<string, string> = {
    // A typed TypeScript default export: tsx strips the types.
    'length.ts':
      'export default (completion: string, episode: { target: string }): number => (completion.includes(episode.target) ? 0.5 : 0) + completion.length / 100;\n',
    'named.ts':
      'export const VERSION = 2;\nexport async function exact(completion: string, episode: { target: string }): Promise<number> {\n  return completion.endsWith(episode.target) ? 1 : 0;\n}\n',
    'several.mjs': 'export const a = () => 1;\nexport const b = () => 2;\n',
    'nothing.js': 'export const weight = 3;\n',
    'throws.ts':
      "export default (completion: string): number => { if (completion.startsWith('no')) throw new Error('cannot parse\\nsecond line'); return 1; };\n",
    'string.ts': "export default (): unknown => 'high';\n",
    'nan.ts': 'export default (): number => Number.NaN;\n',
    'broken.ts': 'export default (completion: string => 1;\n',
    // A promise that never settles (Node then exits with status 13 once nothing else is pending), and a long timer.
    'never.ts': 'export default (): Promise<number> => new Promise(() => {});\n',
    'slow.ts':
      'export default (): Promise<number> => new Promise((done) => setTimeout(() => done(1), 3_600_000).unref());\n',
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
});

const values = async (spec: string) => (await computeRewards([await loadRewardFunction(spec, dir)], inputs)).total;

describe('reward specs', () => {
  it('tells built-in names from module paths with an optional export', () => {
    expect(parseRewardSpec('domain')).toEqual({ builtin: 'domain' });
    expect(parseRewardSpec('rewards/count.ts')).toEqual({ path: 'rewards/count.ts', exportName: null });
    expect(parseRewardSpec('./r.mjs:score')).toEqual({ path: './r.mjs', exportName: 'score' });
    expect(() => parseRewardSpec('accuracy')).toThrow(UserError);
    expect(() => parseRewardSpec('accuracy')).toThrow(
      /--reward accuracy: neither a built-in reward \(domain, format\)/,
    );
  });
});

describe('built-in rewards', () => {
  it("'domain' is the environment's score and 'format' 1 for a valid final answer", async () => {
    const rewards = await loadRewardFunctions(['domain', 'format']);
    const out = await computeRewards(rewards, inputs);
    expect(out.byName).toEqual({ domain: [1, 0, 0], format: [1, 1, 0] });
    expect(out.total).toEqual([2, 1, 0]);
  });
});

describe('reward modules', () => {
  it('loads a TypeScript default export, named after its file', async () => {
    const reward = await loadRewardFunction('length.ts', dir);
    expect(reward.name).toBe('length');
    // 'FINAL ANSWER: 2' holds the target 2: 0.5 + 15 / 100; the second does not: 15 / 100; 'no idea': 7 / 100
    const got = await values('length.ts');
    [0.65, 0.15, 0.07].forEach((w, i) => expect(got[i]).toBeCloseTo(w, 12));
  });

  it('loads a plain JavaScript module (.mjs) natively', async () => {
    writeFileSync(join(dir, 'chars.mjs'), 'export default (completion) => completion.length / 100;\n');
    const reward = await loadRewardFunction('chars.mjs', dir);
    expect(reward.name).toBe('chars');
    expect(await values('chars.mjs')).toEqual([0.15, 0.15, 0.07]);
  });

  it('loads a named async export, and a module whose only function is not the default', async () => {
    const reward = await loadRewardFunction('named.ts:exact', dir);
    expect(reward.name).toBe('exact');
    expect(await values('named.ts:exact')).toEqual([1, 0, 0]);
    expect((await loadRewardFunction('named.ts', dir)).name).toBe('exact');
  });

  it('sums rewards with their weights and keeps each one under its name', async () => {
    const rewards = await loadRewardFunctions(['domain', 'named.ts:exact', 'format'], dir);
    const out = await computeRewards(rewards, inputs, [1, 0.5, 0.25]);
    // [1 + 0.5 + 0.25, 0 + 0 + 0.25, 0 + 0 + 0]
    expect(out.total).toEqual([1.75, 0.25, 0]);
    expect(Object.keys(out.byName)).toEqual(['domain', 'exact', 'format']);
  });
});

describe('bad rewards: one line naming the module (and the episode)', () => {
  const rejects = async (promise: Promise<unknown>, message: RegExp) => {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
  };

  it('a module that does not exist', async () => {
    await rejects(loadRewardFunction('missing.ts', dir), /^--reward missing\.ts: no such file .*missing\.ts$/);
  });

  it('a module that exports no function, several without a default, or not the one named', async () => {
    await rejects(
      loadRewardFunction('nothing.js', dir),
      /--reward nothing\.js: needs a default export .*; it exports no function/,
    );
    await rejects(
      loadRewardFunction('several.mjs', dir),
      /it exports several \(a, b\): pick one with several\.mjs:NAME/,
    );
    await rejects(
      loadRewardFunction('named.ts:score', dir),
      /--reward named\.ts:score: exports no function named score \(functions: exact\)/,
    );
  });

  it('a module that does not load', async () => {
    await rejects(loadRewardFunction('broken.ts', dir), /^--reward broken\.ts: the module failed to load: /);
  });

  it('a reward that throws, naming the episode', async () => {
    await rejects(values('throws.ts'), /^--reward throws\.ts: threw on episode shell-test-ccc: cannot parse$/);
  });

  it('a reward that returns a non-number or a non-finite number', async () => {
    await rejects(
      values('string.ts'),
      /^--reward string\.ts: returned "high" on episode shell-test-aaa; a reward must be a finite number$/,
    );
    await rejects(values('nan.ts'), /returned NaN on episode shell-test-aaa/);
  });

  it('a reward that does not answer within its time limit, naming the episode', async () => {
    const bounded = async (spec: string) =>
      (await computeRewards([await loadRewardFunction(spec, dir, 0.05)], inputs)).total;
    await rejects(
      bounded('never.ts'),
      /^--reward never\.ts: no answer within 0\.05 s on episode shell-test-aaa \(--reward-timeout\)$/,
    );
    await rejects(bounded('slow.ts'), /^--reward slow\.ts: no answer within 0\.05 s on episode shell-test-aaa/);
  });

  it('two rewards under one name, and weights that do not match the rewards', async () => {
    await rejects(
      loadRewardFunctions(['named.ts', 'named.ts:exact'], dir),
      /--reward named\.ts:exact: its name exact is already taken by --reward named\.ts/,
    );
    await rejects(
      computeRewards(await loadRewardFunctions(['domain', 'format']), inputs, [1]),
      /--reward-weights: 1 weights for 2 rewards \(domain, format\)/,
    );
  });
});
