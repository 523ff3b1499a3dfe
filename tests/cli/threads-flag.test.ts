// `--threads` beyond the machine's cores is refused with one line before anything starts (a count like 999 would start
// that many threads, each with its own memory): train, evaluate and serve, each checking the flag before its other input.
import { describe, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';

const cores = availableParallelism();
const tooMany =
  /--threads: more than this machine's \d+ cores; give at most \d+, or leave it out to use them all \(got \d+\)/;

describe.concurrent('metrl --threads beyond the cores', () => {
  for (const value of ['999', String(cores + 1)]) {
    it(`evaluate --threads ${value}`, async () => {
      expectUserError(
        await metrl([
          'evaluate',
          '--model',
          'baseline:game-start',
          '--domain',
          'shell',
          '--threads',
          value,
          '--out',
          join(scratchDir('threads'), 'out'),
        ]),
        tooMany,
      );
    }, 30_000);
  }

  it('serve --threads 999', async () => {
    expectUserError(
      await metrl(['serve', '--checkpoint', join(scratchDir('threads'), 'none'), '--port', '0', '--threads', '999']),
      tooMany,
    );
  }, 30_000);

  it('train --threads 999', async () => {
    expectUserError(
      await metrl([
        'train',
        '--domain',
        'shell',
        '--modality',
        'text',
        '--engine',
        'ort',
        '--threads',
        '999',
        '--out',
        join(scratchDir('threads'), 'run'),
      ]),
      tooMany,
    );
  }, 60_000);
});
