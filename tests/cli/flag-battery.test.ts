// Bad flags for every command through the real binary: each is one "metrl: error:" line naming the flag and the value
// the user typed, exit status 2, and nothing written. Cases run concurrently (each is a process).
import { describe, expect, it } from 'vitest';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';

describe.concurrent('metrl: flags that are not numbers', () => {
  const cases: Array<[string, string[], RegExp]> = [
    [
      'generate --n',
      ['generate', '--domain', 'shell', '--modality', 'text', '--n', 'ten', '--out', 'data'],
      /--n: expected a number, got "ten"/,
    ],
    [
      'generate --image-size',
      ['generate', '--domain', 'shell', '--modality', 'image', '--n', '2', '--image-size', 'big', '--out', 'data'],
      /--image-size: expected a number, got "big"/,
    ],
    [
      'evaluate --max-tokens=',
      ['evaluate', '--model', 'baseline:game-start', '--max-tokens=abc'],
      /--max-tokens: expected a number, got "abc"/,
    ],
    ['evaluate --n', ['evaluate', '--model', 'baseline:game-start', '--n', 'x'], /--n: expected a number, got "x"/],
    [
      'train --steps',
      ['train', '--domain', 'shell', '--modality', 'text', '--steps', 'many'],
      /--steps: expected a number, got "many"/,
    ],
    ['pretrain --steps', ['pretrain', '--steps', 'many'], /--steps: expected a number, got "many"/],
    [
      'serve --port',
      ['serve', '--checkpoint', 'checkpoints/base', '--port', 'http'],
      /--port: expected a number, got "http"/,
    ],
  ];
  it.each(cases)('%s → one line naming the typed value', async (_name, args, pattern) => {
    const cwd = scratchDir('nan');
    const result = await metrl(
      args.map((a) => (a === 'checkpoints/base' ? join(import.meta.dirname, '..', '..', a) : a)),
      { cwd },
    );
    expectUserError(result, pattern);
    expect(readdirSync(cwd)).toEqual([]);
  });
});

describe.concurrent('metrl: sizes and run preparation', () => {
  const tinyBase = join(import.meta.dirname, '..', '..', 'checkpoints', 'base');
  const cases: Array<[string, string[], RegExp]> = [
    [
      'generate --n 1e9 (ran out of memory)',
      ['generate', '--domain', 'shell', '--modality', 'text', '--n', '1e9', '--out', 'data'],
      /--n: at most 1,000,000 episodes/,
    ],
    [
      'generate --actions 1e6',
      ['generate', '--domain', 'shell', '--modality', 'text', '--n', '2', '--actions', '1e6', '--out', 'data'],
      /--actions: at most 1000 actions/,
    ],
    [
      'evaluate --n 1e9',
      ['evaluate', '--model', 'baseline:game-start', '--domain', 'shell', '--n', '1e9'],
      /--n: at most 100,000 items/,
    ],
    [
      'train --train-size 1e9',
      ['train', '--domain', 'shell', '--modality', 'text', '--train-size', '1e9'],
      // Named as typed, not by its config key (trainSize).
      /: --train-size: Too big: expected number to be <=100000 \(got 1000000000\)$/,
    ],
    [
      'train --games for the shell game',
      ['train', '--domain', 'shell', '--modality', 'text', '--games', 'x.uci', '--checkpoint', tinyBase],
      /--games and --offset apply to --domain chess/,
    ],
    [
      'train --games that does not exist',
      ['train', '--domain', 'chess', '--modality', 'text', '--games', 'nope.uci', '--checkpoint', tinyBase],
      /--games nope\.uci: no such file/,
    ],
  ];
  it.each(cases)('%s → one line, nothing written', async (_name, args, pattern) => {
    const cwd = scratchDir('sizes');
    expectUserError(await metrl(args, { cwd }), pattern);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('train with a games file that does not parse → one line, and no run folder left', async () => {
    const cwd = scratchDir('bad-games');
    writeFileSync(join(cwd, 'games.uci'), 'e2e4 zz\n');
    expectUserError(
      await metrl(
        [
          'train',
          '--domain',
          'chess',
          '--modality',
          'text',
          '--games',
          'games.uci',
          '--checkpoint',
          tinyBase,
          '--test-size',
          '2',
          '--train-size',
          '2',
        ],
        { cwd },
      ),
      /games\.uci: game 1, ply 2: 'zz' is not a UCI move/,
    );
    expect(readdirSync(cwd)).toEqual(['games.uci']);
  });
});
