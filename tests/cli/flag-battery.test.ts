// Bad flags for every command through the real binary: each is one "metrl: error:" line naming the flag and the value
// the user typed, exit status 2, and nothing written. Cases run concurrently (each is a process).
import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';

describe.concurrent('metrl: flags that are not numbers', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['generate --n', ['generate', '--domain', 'shell', '--modality', 'text', '--n', 'ten', '--out', 'data'], /--n: expected a number, got "ten"/],
    ['generate --image-size', ['generate', '--domain', 'shell', '--modality', 'image', '--n', '2', '--image-size', 'big', '--out', 'data'], /--image-size: expected a number, got "big"/],
    ['evaluate --max-tokens=', ['evaluate', '--model', 'baseline:game-start', '--max-tokens=abc'], /--max-tokens: expected a number, got "abc"/],
    ['evaluate --n', ['evaluate', '--model', 'baseline:game-start', '--n', 'x'], /--n: expected a number, got "x"/],
    ['train --steps', ['train', '--domain', 'shell', '--modality', 'text', '--steps', 'many'], /--steps: expected a number, got "many"/],
    ['pretrain --steps', ['pretrain', '--steps', 'many'], /--steps: expected a number, got "many"/],
    ['serve --port', ['serve', '--checkpoint', 'checkpoints/base', '--port', 'http'], /--port: expected a number, got "http"/],
  ];
  it.each(cases)('%s → one line naming the typed value', async (_name, args, pattern) => {
    const cwd = scratchDir('nan');
    const result = await metrl(args.map((a) => (a === 'checkpoints/base' ? join(import.meta.dirname, '..', '..', a) : a)), { cwd });
    expectUserError(result, pattern);
    expect(readdirSync(cwd)).toEqual([]);
  });
});
