// `metrl generate` bad input through the real binary: each case exits with status 2, prints exactly one
// "metrl: error: …" line naming what is wrong, and leaves nothing on disk. Cases run concurrently (each is a process).
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';

describe.concurrent('metrl generate: bad input', () => {
  const bad: Array<[string, string[], RegExp]> = [
    ['unknown domain', ['--domain', 'go', '--modality', 'text', '--n', '2'], /unknown domain 'go'/],
    ['unknown modality', ['--domain', 'shell', '--modality', 'video', '--n', '2'], /--modality/],
    ['n = 0', ['--domain', 'shell', '--modality', 'text', '--n', '0'], /--n/],
    ['n not a number', ['--domain', 'shell', '--modality', 'text', '--n', 'ten'], /--n/],
    ['negative T', ['--domain', 'shell', '--modality', 'text', '--n', '2', '--actions', '-1'], /--actions/],
    [
      'image ratio above 1',
      ['--domain', 'shell', '--modality', 'mixed', '--image-ratio', '1.5', '--n', '2'],
      /--image-ratio/,
    ],
    [
      'image ratio below 0',
      ['--domain', 'shell', '--modality', 'mixed', '--image-ratio', '-0.1', '--n', '2'],
      /--image-ratio/,
    ],
    ['unknown split', ['--domain', 'shell', '--modality', 'text', '--n', '2', '--split', 'dev'], /--split/],
    [
      'prompt the env lacks',
      ['--domain', 'shell', '--modality', 'text', '--n', '2', '--prompt', 'fen-trace'],
      /fen-trace is not available for shell/,
    ],
    [
      'games file for shell',
      ['--domain', 'shell', '--modality', 'text', '--n', '2', '--games', 'x.pgn'],
      /--games does not apply/,
    ],
    ['unknown flag', ['--domain', 'shell', '--modality', 'text', '--n', '2', '--colour', 'red'], /Unknown argument/],
    ['missing --n', ['--domain', 'shell', '--modality', 'text'], /Missing required argument: n/],
  ];
  it.each(bad)('%s → exit 2, one line, nothing written', async (_name, args, pattern) => {
    const parent = scratchDir('bad');
    const out = join(parent, 'data');
    expectUserError(await metrl(['generate', ...args, '--out', out]), pattern);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(parent)).toEqual([]);
  });

  it('an --out that is a file → exit 2', async () => {
    const file = join(scratchDir('file'), 'x');
    writeFileSync(file, '');
    expectUserError(
      await metrl(['generate', '--domain', 'shell', '--modality', 'text', '--n', '2', '--out', file]),
      /not a directory/,
    );
  });
});
