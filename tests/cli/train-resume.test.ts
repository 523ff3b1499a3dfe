// `metrl train` stopped and continued as a user does: Ctrl-C says where the run stands and how to continue (exit 130),
// the same command with --resume appended is accepted (flags equal to the recorded ones), and a real change is refused
// naming the old and the new value.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir, PROJECT } from './helpers.ts';
import { spawnTracked } from '../helpers/tracked-children.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';

const base = tinyBaseCheckpoint();
const TINY = [
  '--domain',
  'shell',
  '--modality',
  'text',
  '--checkpoint',
  base,
  '--backend',
  'wasm',
  '--train-size',
  '8',
  '--actions',
  '2',
  '--test-size',
  '4',
  '--group-size',
  '4',
  '--prompts-per-step',
  '2',
  '--gradient-accumulation',
  '1',
  '--max-completion-tokens',
  '3',
  '--eval-every',
  '2',
  '--checkpoint-every',
  '2',
  '--learning-rate',
  '0.05',
  '--seed',
  '1',
  '--quiet',
];

/** Metrics without wall-clock fields. */
function comparable(runDir: string) {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const { time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest } = JSON.parse(l);
      if (rest.trl) delete rest.trl.step_time; // TRL's step_time: seconds too
      return rest;
    });
}

describe('metrl train: stop and continue', () => {
  it('SIGKILL as soon as the run folder appears (before or during the step-0 evaluation) loses nothing', async () => {
    const root = scratchDir('train-kill0');
    const whole = join(root, 'whole');
    const cut = join(root, 'cut');
    const first = await metrl(['train', ...TINY, '--steps', '2', '--out', whole]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    await new Promise<void>((done) => {
      const child = spawnTracked(
        process.execPath,
        [join(PROJECT, 'bin', 'metrl.js'), 'train', ...TINY, '--steps', '2', '--out', cut],
        { cwd: PROJECT, stdio: 'ignore' },
      );
      const timer = setInterval(() => {
        if (existsSync(join(cut, 'config.json'))) {
          clearInterval(timer);
          child.kill('SIGKILL');
        }
      }, 5);
      child.on('exit', () => {
        clearInterval(timer);
        done();
      });
    });
    const resumed = await metrl(['train', '--resume', '--out', cut, '--quiet']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(comparable(cut)).toEqual(comparable(whole));
  });

  it('Ctrl-C names the step, the last checkpoint and the command that continues; --resume then finishes the run', async () => {
    const out = join(scratchDir('train-sigint'), 'run');
    const latest = join(out, 'checkpoints', 'latest');
    const result = await new Promise<{ code: number | null; stderr: string }>((done) => {
      const child = spawnTracked(
        process.execPath,
        [join(PROJECT, 'bin', 'metrl.js'), 'train', ...TINY, '--steps', '400', '--out', out],
        { cwd: PROJECT },
      );
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const timer = setInterval(() => {
        if (existsSync(latest) && readFileSync(latest, 'utf8').trim() === 'step-2') {
          clearInterval(timer);
          child.kill('SIGINT');
        }
      }, 20);
      child.on('exit', (code) => {
        clearInterval(timer);
        done({ code, stderr });
      });
    });
    expect(result.code).toBe(130);
    const lines = result.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^train: interrupted after step \\d+ of 400; its last checkpoint is step-\\d+, and finished evaluations are kept\\. Continue with: metrl train --resume --out ${out.replaceAll('/', '\\/')}$`,
      ),
    );
    const resumed = await metrl(['train', '--resume', '--out', out, '--steps', '4', '--quiet']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
  });

  it('accepts the original command with --resume appended, and refuses a real change naming old and new', async () => {
    const out = join(scratchDir('train-again'), 'run');
    const first = await metrl(['train', ...TINY, '--steps', '2', '--out', out]);
    expect(first.stderr).toBe('');
    const again = await metrl(['train', ...TINY, '--steps', '2', '--out', out, '--resume']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expectUserError(
      await metrl([
        'train',
        ...TINY.map((a, i) => (TINY[i - 1] === '--seed' ? '2' : a)),
        '--steps',
        '2',
        '--out',
        out,
        '--resume',
      ]),
      /--resume: --seed 2 differs from the run's 1 .*only --steps may change/,
    );
    expectUserError(
      await metrl([
        'train',
        ...TINY.map((a, i) => (TINY[i - 1] === '--modality' ? 'image' : a)),
        '--out',
        out,
        '--resume',
      ]),
      /--resume: --modality image differs from the run's text/,
    );
  });
});
