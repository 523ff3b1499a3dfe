// Outputs that cannot be written, through the real binary, for every command that writes: an --out under a folder
// that is a file (ENOTDIR), under an immutable folder (EPERM; `chattr +i`, so these cases need root on ext4), or a
// folder where a file is expected (EISDIR). Each must be one "metrl: error:" line naming the path, exit status 2, and
// leave nothing behind (no temp file, no half-made folder).
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { fakeRun } from './fake-run.ts';

const root = scratchDir('write-errors');
const scoreInput = join(root, 'answers.jsonl');
writeFileSync(scoreInput, JSON.stringify({ domain: 'shell', target: '2', response: 'FINAL ANSWER: 2' }) + '\n');
const run = join(root, 'run');
fakeRun(run, 'shell', 'text', 0.02);
const snapshot = () => JSON.stringify(readdirSync(root, { recursive: true }).sort());

/** Each command with its output flag last, so that the case can append the unwritable path. */
const commands: Array<[string, string[]]> = [
  ['generate', ['generate', '--domain', 'shell', '--modality', 'text', '--n', '2', '--out']],
  ['score', ['score', scoreInput, '--out']],
  ['train', ['train', '--domain', 'shell', '--modality', 'text', '--steps', '1', '--quiet', '--out']],
  ['evaluate', ['evaluate', '--model', 'baseline:game-start', '--domain', 'shell', '--n', '2', '--quiet', '--out']],
  ['pretrain', ['pretrain', '--steps', '1', '--quiet', '--out']],
  ['plot', ['plot', run, '--out']],
];

const file = join(root, 'a-file');
writeFileSync(file, '');
const immutable = join(root, 'immutable');
mkdirSync(immutable);
let canFreeze = true;
try {
  execFileSync('chattr', ['+i', immutable], { stdio: 'ignore' });
} catch {
  canFreeze = false;
}
afterAll(() => {
  if (canFreeze) execFileSync('chattr', ['-i', immutable], { stdio: 'ignore' });
});
const before = snapshot();

describe.concurrent('metrl: outputs that cannot be written', () => {
  for (const [name, args] of commands) {
    it(`${name} --out under a file → one line naming it, nothing left`, async () => {
      const out = join(file, 'out');
      expectUserError(
        await metrl([...args, out]),
        new RegExp(`${out.replaceAll('/', '\\/')}.*not a folder \\(ENOTDIR\\)`),
      );
    });
  }

  for (const [name, args] of commands) {
    it.runIf(canFreeze)(`${name} --out in an immutable folder → one line naming it, nothing left`, async () => {
      const out = join(immutable, 'out');
      expectUserError(await metrl([...args, out]), /immutable.*(EPERM|EACCES)/);
    });
  }

  it('score --out a folder → one line naming it, no temp file left', async () => {
    const dir = join(root, 'score-dir');
    mkdirSync(dir);
    expectUserError(await metrl(['score', scoreInput, '--out', dir]), /score-dir: cannot write: is a folder/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('after the failures', () => {
  it('nothing was left on disk', () => {
    const after = JSON.parse(snapshot()) as string[];
    expect(after.filter((p) => !p.startsWith('score-dir'))).toEqual(JSON.parse(before));
  });
});
