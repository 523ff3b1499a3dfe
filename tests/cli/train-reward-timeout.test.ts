// A reward module that never answers, through the real binary: the run stops with one line naming the module and the
// episode (exit 2) instead of Node's silent exit 13 or a hang, and the run folder it leaves takes --resume, with a
// longer --reward-timeout if that is what the module needs.
import { describe, expect, it } from 'vitest';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';

const base = tinyBaseCheckpoint();
const TINY = [
  ...Object.entries({
    domain: 'shell',
    modality: 'text',
    checkpoint: base,
    backend: 'wasm',
    'train-size': '8',
    actions: '2',
    'test-size': '4',
    'group-size': '2',
    'prompts-per-step': '1',
    'max-completion-tokens': '2',
    'eval-every': '2',
    'checkpoint-every': '1',
    steps: '2',
  }).flatMap(([k, v]) => [`--${k}`, v]),
  '--quiet',
];

describe('metrl train --reward with a module that never answers', () => {
  it('stops with one line naming the module and the episode, and the run resumes', async () => {
    const root = scratchDir('train-reward-timeout');
    const out = join(root, 'run');
    const never = join(root, 'never.ts');
    writeFileSync(never, 'export default (): Promise<number> => new Promise(() => {});\n');
    const first = await metrl(['train', ...TINY, '--reward', never, '--reward-timeout', '0.3', '--out', out]);
    expectUserError(
      first,
      /--reward .*never\.ts: no answer within 0\.3 s on episode shell-train-\S+ \(--reward-timeout\)$/,
    );
    expect(existsSync(join(out, 'config.json'))).toBe(true);
    // A longer limit is the one change --resume accepts besides --steps; the module still never answers.
    const resumed = await metrl([
      'train',
      ...TINY,
      '--reward',
      never,
      '--reward-timeout',
      '0.4',
      '--out',
      out,
      '--resume',
    ]);
    expectUserError(resumed, /never\.ts: no answer within 0\.4 s on episode/);
    rmSync(root, { recursive: true, force: true });
  }, 120_000);
});
