// The lenient chess reward in training is an opt-in named in the run folder: `metrl train --chess-answer lenient`
// records it in config.json (the episodes' scoring reads it), a resume cannot change it, and it applies to chess
// episodes the run generates only. Through the real binary on a tiny base.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';

const base = tinyBaseCheckpoint();
const flags = [
  '--domain',
  'chess',
  '--modality',
  'text',
  '--checkpoint',
  base,
  '--backend',
  'wasm',
  '--train-size',
  '4',
  '--actions',
  '1',
  '--test-size',
  '2',
  '--group-size',
  '2',
  '--prompts-per-step',
  '1',
  '--gradient-accumulation',
  '1',
  '--max-completion-tokens',
  '3',
  '--eval-every',
  '1',
  '--quiet',
];

describe('metrl train --chess-answer', () => {
  it('records the lenient reward in config.json, and a resume may not change it', async () => {
    const out = join(scratchDir('train-lenient'), 'run');
    const run = await metrl(['train', ...flags, '--steps', '1', '--chess-answer', 'lenient', '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    const info = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(info.envExtra).toEqual({ 'chess-answer': 'lenient' });
    expectUserError(
      await metrl(['train', ...flags, '--steps', '2', '--chess-answer', 'reference', '--resume', '--out', out]),
      /--resume: --chess-answer reference differs from the run's lenient/,
    );
  }, 120_000);

  it('applies to chess episodes the run generates', async () => {
    const out = join(scratchDir('train-lenient'), 'run');
    const shell = flags.map((f) => (f === 'chess' ? 'shell' : f));
    expectUserError(
      await metrl(['train', ...shell, '--chess-answer', 'lenient', '--out', out]),
      /--chess-answer applies to --domain chess/,
    );
  }, 60_000);
});
