// `metrl train` through the real binary: a run killed mid-way and resumed reaches the same metrics as an
// uninterrupted run with the same seed; bad input (checkpoints, config, --resume) is one line and exit status 2.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir, expectUserError, PROJECT } from './helpers.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';

const base = tinyBaseCheckpoint();
const TINY_FLAGS: Record<string, string> = {
  domain: 'shell', modality: 'text', checkpoint: base, backend: 'wasm', 'train-size': '8', actions: '2', 'test-size': '4', 'group-size': '4',
  'prompts-per-step': '2', 'gradient-accumulation': '1', 'max-completion-tokens': '3', 'eval-every': '2', 'checkpoint-every': '2', 'learning-rate': '0.05',
};
/** The tiny run's flags, with some replaced (yargs would turn a repeated flag into a list). */
const tiny = (overrides: Record<string, string> = {}) => [...Object.entries({ ...TINY_FLAGS, ...overrides }).flatMap(([k, v]) => [`--${k}`, v]), '--quiet'];
const TINY = tiny();

/** Metrics without wall-clock fields. */
function comparable(runDir: string) {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => {
    const { time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest } = JSON.parse(l);
    return rest;
  });
}

/** Start `metrl train` and SIGKILL it as soon as `checkpoints/latest` names step `step`. */
function trainAndKill(args: string[], latest: string, step: number): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), ...args], { cwd: PROJECT, stdio: 'ignore' });
    const timer = setInterval(() => {
      if (existsSync(latest) && readFileSync(latest, 'utf8').trim() === `step-${step}`) {
        clearInterval(timer);
        child.kill('SIGKILL');
      }
    }, 20);
    child.on('exit', (code, signal) => {
      clearInterval(timer);
      if (signal === 'SIGKILL') done();
      else fail(new Error(`train ended by itself (code ${code}) before it could be killed`));
    });
  });
}

describe('metrl train', () => {
  it('resumes a killed run to the same metrics as an uninterrupted one', async () => {
    const root = scratchDir('train');
    const whole = join(root, 'whole');
    const cut = join(root, 'cut');
    const full = await metrl(['train', ...TINY, '--steps', '6', '--out', whole]);
    expect(full.stderr).toBe('');
    expect(full.code).toBe(0);
    await trainAndKill(['train', ...TINY, '--steps', '6', '--out', cut], join(cut, 'checkpoints', 'latest'), 2);
    const resumed = await metrl(['train', '--resume', '--out', cut, '--quiet']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(comparable(cut)).toEqual(comparable(whole));
    expect(comparable(whole).filter((r) => r.type === 'train')).toHaveLength(6);
    for (const f of ['adapter_config.json', 'adapter_model.safetensors', 'optimizer.safetensors', 'trainer_state.json']) {
      expect(existsSync(join(cut, 'checkpoints', 'step-6', f))).toBe(true);
    }
    const config = JSON.parse(readFileSync(join(whole, 'config.json'), 'utf8'));
    expect(config.backend).toBe('wasm');
    expect(config.config.groupSize).toBe(4);
  });

  it('rejects bad input with one line and exit status 2', async () => {
    const root = scratchDir('train-bad');
    const out = join(root, 'run');
    const withCheckpoint = (dir: string) => tiny({ checkpoint: dir });
    expectUserError(await metrl(['train', ...withCheckpoint(join(root, 'nope')), '--out', out]), /nope: no such checkpoint folder/);

    const incomplete = join(root, 'incomplete');
    mkdirSync(incomplete);
    copyFileSync(join(base, 'config.json'), join(incomplete, 'config.json'));
    expectUserError(await metrl(['train', ...withCheckpoint(incomplete), '--out', out]), /incomplete checkpoint \(missing model.safetensors, tokenizer.json\)/);

    // Weights of one shape under a config.json describing another.
    const other = tinyBaseCheckpoint(BuiltinPolicy.create({ architecture: { dModel: 16, nLayers: 1, nHeads: 2, dMlp: 32, imageSize: 16, patchSize: 8, maxContext: 256 }, seed: 2 }));
    copyFileSync(join(base, 'config.json'), join(other, 'config.json'));
    expectUserError(await metrl(['train', ...withCheckpoint(other), '--out', out]), /shape|lacks tensor/);

    const configFile = join(root, 'config.json');
    writeFileSync(configFile, JSON.stringify({ groupSize: 8, warmup: 3 }));
    expectUserError(await metrl(['train', ...TINY, '--config', configFile, '--out', out]), /warmup/);
    expectUserError(await metrl(['train', ...tiny({ 'group-size': '1' }), '--out', out]), /groupSize: group size must be at least 2/);
    expectUserError(await metrl(['train', ...tiny({ 'learning-rate': '-0.001' }), '--out', out]), /learningRate/);
    expectUserError(await metrl(['train', '--resume', '--out', join(root, 'empty')]), /holds no run/);
    expect(existsSync(out)).toBe(false); // nothing half-written
    rmSync(root, { recursive: true, force: true });
  });
});

describe('metrl train: the GRPO family and reward modules, bad input', () => {
  it('rejects unknown loss types, combinations TRL forbids and unusable reward modules with one line and exit 2', async () => {
    const root = scratchDir('train-grpo-bad');
    const out = join(root, 'run');
    expectUserError(await metrl(['train', ...tiny({ 'loss-type': 'ppo' }), '--out', out]), /lossType: unknown loss type; expected one of grpo, bnpo, dr_grpo, dapo/);
    expectUserError(await metrl(['train', ...tiny({ 'importance-sampling-level': 'sequence', 'loss-type': 'dapo' }), '--out', out]), /importanceSamplingLevel: 'sequence' \(GSPO\) needs lossType 'grpo'/);
    expectUserError(await metrl(['train', ...tiny({ epsilon: '0.2', 'epsilon-high': '0.1' }), '--out', out]), /epsilonHigh must be at least epsilon/);
    expectUserError(await metrl(['train', ...tiny({ reward: join(root, 'missing.ts') }), '--out', out]), /--reward .*missing\.ts: no such file/);
    const noFunction = join(root, 'constant.ts');
    writeFileSync(noFunction, 'export const answer = 42;\n');
    expectUserError(await metrl(['train', ...tiny({ reward: noFunction }), '--out', out]), /constant\.ts: needs a default export .*it exports no function/);
    expectUserError(await metrl(['train', ...tiny({ reward: `${noFunction}:score` }), '--out', out]), /exports no function named score/);
    expectUserError(await metrl(['train', ...tiny({ reward: 'accuracy' }), '--out', out]), /--reward accuracy: neither a built-in reward/);
    expect(existsSync(out)).toBe(false); // nothing written before the error
    rmSync(root, { recursive: true, force: true });
  });
});
