// The environment flags of boxes and mcst reach the environments through the real CLI, and bad values stop the
// command with one line and status 2, before anything is written.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../core/errors.ts';
import { envExtraFromFlags } from '../../envs/cli-options.ts';
import { expectUserError, metrl, scratchDir } from '../cli/helpers.ts';

describe('environment flags', () => {
  it('are routed to the domain they belong to, and refused for other domains', () => {
    expect(envExtraFromFlags(['mcst', 'boxes'], { level: '3', 'split-kind': 'vocab', quiet: false })).toEqual({
      mcst: { level: '3' },
      boxes: { 'split-kind': 'vocab' },
    });
    expect(() => envExtraFromFlags(['chess'], { negation: 'off' })).toThrow(UserError);
    expect(envExtraFromFlags(['chess'], {})).toEqual({});
  });

  it('metrl generate passes them through and rejects bad values with one line', async () => {
    const dir = scratchDir('mcst-cli');
    const ok = await metrl([
      'generate',
      '--domain',
      'mcst',
      '--modality',
      'text',
      '--n',
      '6',
      '--level',
      '5',
      '--negation',
      'paired',
      '--question-type',
      'possession',
      '--out',
      join(dir, 'a'),
      '--quiet',
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    const rows = readFileSync(join(dir, 'a', 'metadata.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toHaveLength(6);
    for (const r of rows) expect(r.meta).toMatchObject({ level: 5, questionType: 'possession' });
    expect(rows.some((r) => r.meta.pairRole === 'without-negation')).toBe(true);

    expectUserError(
      await metrl([
        'generate',
        '--domain',
        'boxes',
        '--modality',
        'text',
        '--n',
        '3',
        '--split-kind',
        'nope',
        '--out',
        join(dir, 'b'),
      ]),
      /split-kind/,
    );
    expect(existsSync(join(dir, 'b', 'metadata.jsonl'))).toBe(false);
    // (Image requests and flags of another domain are refused in-process: tests/envs/boxes.test.ts and above.)
  });
});
