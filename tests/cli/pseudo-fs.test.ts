// An output path on a pseudo-file system (procfs answers ENOENT to mkdir under /proc/self although the parent is
// there): Node's recursive mkdir retried that for ever at 100% CPU. Each command must fail with one line naming the
// path, exit 2, and leave nothing behind.
import { describe, expect, it } from 'vitest';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';

describe('metrl: an --out on a pseudo-file system', () => {
  it('generate --out /proc/self/<new folder> fails at once with one line', async () => {
    const out = '/proc/self/metrl-out/data';
    const result = await metrl(['generate', '--domain', 'shell', '--modality', 'text', '--n', '2', '--out', out]);
    expectUserError(
      result,
      /\/proc\/self\/metrl-out\/data: cannot write the dataset: no such file or folder \(ENOENT\)/,
    );
    expect(existsSync('/proc/self/metrl-out')).toBe(false);
  }, 30_000);

  it('score --out a file in a new folder under /proc/self fails at once with one line', async () => {
    const answers = join(scratchDir('pseudo-fs'), 'answers.jsonl');
    writeFileSync(answers, JSON.stringify({ domain: 'shell', target: '2', response: 'FINAL ANSWER: 2' }) + '\n');
    const result = await metrl(['score', answers, '--out', '/proc/self/metrl-out/rows.jsonl']);
    expectUserError(
      result,
      /\/proc\/self\/metrl-out\/rows\.jsonl: cannot create folder: no such file or folder \(ENOENT\)/,
    );
  }, 30_000);
});
