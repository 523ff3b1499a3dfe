// `metrl train` through the real binary: a run killed mid-way and resumed reaches the same metrics as an
// uninterrupted run with the same seed; bad input (checkpoints, config, --resume) is one line and exit status 2.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir, expectUserError } from './helpers.ts';
import { trainAndKill } from '../helpers/train-and-kill.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';

const base = tinyBaseCheckpoint();
const TINY_FLAGS: Record<string, string> = {
  domain: 'shell',
  modality: 'text',
  checkpoint: base,
  backend: 'wasm',
  'train-size': '8',
  actions: '2',
  'test-size': '4',
  'group-size': '4',
  'prompts-per-step': '2',
  'gradient-accumulation': '1',
  'max-completion-tokens': '3',
  'eval-every': '2',
  'checkpoint-every': '2',
  'learning-rate': '0.05',
};
/** The tiny run's flags, with some replaced (yargs would turn a repeated flag into a list). */
const tiny = (overrides: Record<string, string> = {}) => [
  ...Object.entries({ ...TINY_FLAGS, ...overrides }).flatMap(([k, v]) => [`--${k}`, v]),
  '--quiet',
];
const TINY = tiny();
/** Tests that start the CLI several times: each start takes 5-8 s on a loaded two-core machine. */
const MANY_PROCESSES = 240_000;

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
    for (const f of [
      'adapter_config.json',
      'adapter_model.safetensors',
      'optimizer.safetensors',
      'trainer_state.json',
    ]) {
      expect(existsSync(join(cut, 'checkpoints', 'step-6', f))).toBe(true);
    }
    const config = JSON.parse(readFileSync(join(whole, 'config.json'), 'utf8'));
    expect(config.backend).toBe('wasm');
    expect(config.config.groupSize).toBe(4);
  });

  it(
    'rejects bad input with one line and exit status 2',
    async () => {
      const root = scratchDir('train-bad');
      const out = join(root, 'run');
      const withCheckpoint = (dir: string) => tiny({ checkpoint: dir });
      expectUserError(
        await metrl(['train', ...withCheckpoint(join(root, 'nope')), '--out', out]),
        /nope: no such checkpoint folder/,
      );

      const incomplete = join(root, 'incomplete');
      mkdirSync(incomplete);
      copyFileSync(join(base, 'config.json'), join(incomplete, 'config.json'));
      expectUserError(
        await metrl(['train', ...withCheckpoint(incomplete), '--out', out]),
        /incomplete checkpoint \(missing model.safetensors, tokenizer.json\)/,
      );

      // Weights of one shape under a config.json describing another.
      const other = tinyBaseCheckpoint(
        BuiltinPolicy.create({
          architecture: { dModel: 16, nLayers: 1, nHeads: 2, dMlp: 32, imageSize: 16, patchSize: 8, maxContext: 256 },
          seed: 2,
        }),
      );
      copyFileSync(join(base, 'config.json'), join(other, 'config.json'));
      expectUserError(await metrl(['train', ...withCheckpoint(other), '--out', out]), /shape|lacks tensor/);

      const configFile = join(root, 'config.json');
      writeFileSync(configFile, JSON.stringify({ groupSize: 8, warmup: 3 }));
      expectUserError(await metrl(['train', ...TINY, '--config', configFile, '--out', out]), /warmup/);
      expectUserError(
        await metrl(['train', ...tiny({ 'group-size': '1' }), '--out', out]),
        /--group-size: group size must be at least 2/,
      );
      expectUserError(
        await metrl(['train', ...tiny({ 'learning-rate': '-0.001' }), '--out', out]),
        /--learning-rate: /,
      );
      expectUserError(await metrl(['train', '--resume', '--out', join(root, 'empty')]), /holds no run/);
      expect(existsSync(out)).toBe(false); // nothing half-written
      rmSync(root, { recursive: true, force: true });
    },
    MANY_PROCESSES,
  );
});

describe('metrl train: the GRPO family and reward modules, bad input', () => {
  it(
    'rejects unknown loss types, combinations TRL forbids and unusable reward modules with one line and exit 2',
    async () => {
      const root = scratchDir('train-grpo-bad');
      const out = join(root, 'run');
      expectUserError(
        await metrl(['train', ...tiny({ 'loss-type': 'ppo' }), '--out', out]),
        /--loss-type: unknown loss type; expected one of grpo, bnpo, dr_grpo, dapo/,
      );
      expectUserError(
        await metrl(['train', ...tiny({ 'importance-sampling-level': 'sequence', 'loss-type': 'dapo' }), '--out', out]),
        /--importance-sampling-level: 'sequence' \(GSPO\) needs lossType 'grpo'/,
      );
      expectUserError(
        await metrl(['train', ...tiny({ epsilon: '0.2', 'epsilon-high': '0.1' }), '--out', out]),
        /epsilonHigh must be at least epsilon/,
      );
      expectUserError(
        await metrl(['train', ...tiny({ reward: join(root, 'missing.ts') }), '--out', out]),
        /--reward .*missing\.ts: no such file/,
      );
      const noFunction = join(root, 'constant.ts');
      writeFileSync(noFunction, 'export const answer = 42;\n');
      expectUserError(
        await metrl(['train', ...tiny({ reward: noFunction }), '--out', out]),
        /constant\.ts: needs a default export .*it exports no function/,
      );
      expectUserError(
        await metrl(['train', ...tiny({ reward: `${noFunction}:score` }), '--out', out]),
        /exports no function named score/,
      );
      expectUserError(
        await metrl(['train', ...tiny({ reward: 'accuracy' }), '--out', out]),
        /--reward accuracy: neither a built-in reward/,
      );
      expect(existsSync(out)).toBe(false); // nothing written before the error
      rmSync(root, { recursive: true, force: true });
    },
    MANY_PROCESSES,
  );
});

describe('metrl train --dataset', () => {
  const noDomain = () => tiny().filter((_, i, all) => all[i] !== '--domain' && all[i - 1] !== '--domain');

  it('trains on a folder `metrl generate` wrote, its domain and modality taken from the rows, tested on the generated split', async () => {
    const root = scratchDir('train-dataset');
    const data = join(root, 'shell-train');
    expect(
      (
        await metrl([
          'generate',
          '--domain',
          'shell',
          '--modality',
          'image',
          '--n',
          '6',
          '--actions',
          '2',
          '--split',
          'train',
          '--image-size',
          '32',
          '--out',
          data,
          '--quiet',
        ])
      ).code,
    ).toBe(0);
    const out = join(root, 'run');
    const args = noDomain().filter((_, i, all) => all[i] !== '--modality' && all[i - 1] !== '--modality');
    const result = await metrl(['train', ...args, '--steps', '2', '--dataset', data, '--out', out]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const info = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect([info.domain, info.modality, info.dataset]).toEqual(['shell', 'image', data]);
    const episodes = new Set(
      readFileSync(join(data, 'metadata.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    );
    const samples = readFileSync(join(out, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(samples.length).toBeGreaterThan(0);
    for (const s of samples) expect(episodes.has(s.episode)).toBe(true); // trained on the folder's rows
    const evals = comparable(out).filter((r) => r.type === 'eval');
    expect(evals.map((r) => `${r.step}:${r.modality}:${r.n}`)).toEqual([
      '0:image:4',
      '0:text:4',
      '2:image:4',
      '2:text:4',
    ]);
    rmSync(root, { recursive: true, force: true });
  });

  it('trains on chat rows (text and image parts, images by path) scored by the named domain, tested on their test rows', async () => {
    const root = scratchDir('train-chat');
    const image = join(root, 'swap.png');
    const { encodePng } = await import('../../core/image.ts');
    writeFileSync(
      image,
      await encodePng({ width: 16, height: 16, channels: 3, data: new Uint8Array(16 * 16 * 3).fill(200) }),
    );
    const row = (i: number, split: string) => ({
      id: `q${i}`,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: `Where is the ball? ${i}` },
            { type: 'image_url', image_url: { url: 'swap.png' } },
          ],
        },
      ],
      target: String((i % 3) + 1),
      split,
    });
    const file = join(root, 'rows.jsonl');
    writeFileSync(
      file,
      [0, 1, 2, 3, 4, 5].map((i) => JSON.stringify(row(i, i < 4 ? 'train' : 'test'))).join('\n') + '\n',
    );
    const out = join(root, 'run');
    const result = await metrl([
      'train',
      ...tiny({ 'max-completion-tokens': '4' }),
      '--steps',
      '1',
      '--dataset',
      file,
      '--out',
      out,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const rows = comparable(out);
    expect(rows.some((r) => r.type === 'baseline')).toBe(false); // no initial state to answer from
    expect(rows.filter((r) => r.type === 'eval').map((r) => `${r.step}:${r.modality}:${r.role}:${r.n}`)).toEqual([
      '0:text:train:2',
      '1:text:train:2',
    ]);
    const samples = readFileSync(join(out, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    for (const s of samples) expect(['q0', 'q1', 'q2', 'q3']).toContain(s.episode);
    rmSync(root, { recursive: true, force: true });
  });

  it(
    'reports bad chat rows by line number, and chat rows without --domain, with one line and exit 2',
    async () => {
      const root = scratchDir('train-dataset-bad');
      const out = join(root, 'run');
      const file = join(root, 'rows.jsonl');
      const good = { messages: [{ role: 'user', content: 'Where is the ball?' }], target: '2' };
      writeFileSync(file, `${JSON.stringify(good)}\n${JSON.stringify({ messages: good.messages })}\n`);
      expectUserError(
        await metrl(['train', ...TINY, '--dataset', file, '--out', out]),
        /rows\.jsonl:2: missing field 'target'/,
      );
      writeFileSync(
        file,
        `${JSON.stringify({ ...good, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'gone.png' } }] }] })}\n`,
      );
      expectUserError(
        await metrl(['train', ...TINY, '--dataset', file, '--out', out]),
        /rows\.jsonl:1: image gone\.png not found/,
      );
      writeFileSync(file, `${JSON.stringify({ ...good, split: 'dev' })}\n`);
      expectUserError(await metrl(['train', ...TINY, '--dataset', file, '--out', out]), /rows\.jsonl:1: field 'split'/);
      writeFileSync(file, `${JSON.stringify(good)}\n`);
      expectUserError(
        await metrl(['train', ...noDomain(), '--dataset', file, '--out', out]),
        /chat rows need --domain/,
      );
      expect(existsSync(out)).toBe(false);
      rmSync(root, { recursive: true, force: true });
    },
    MANY_PROCESSES,
  );

  it(
    'reports bad image-folder rows by line number, a domain that disagrees and bad paths, with one line and exit 2',
    async () => {
      const root = scratchDir('train-folder-bad');
      const out = join(root, 'run');
      const folder = join(root, 'folder');
      mkdirSync(folder);
      writeFileSync(
        join(folder, 'metadata.jsonl'),
        `${JSON.stringify({ id: 'a', domain: 'shell', split: 'train', initial_state: '1', actions: [], modalities: [] })}\n`,
      );
      expectUserError(
        await metrl(['train', ...TINY, '--dataset', folder, '--out', out]),
        /metadata\.jsonl:1: missing field 'target'/,
      );
      writeFileSync(
        join(folder, 'metadata.jsonl'),
        `${JSON.stringify({ id: 'a', domain: 'shell', split: 'train', initial_state: '1', actions: [], modalities: [], target: '1' })}\n`,
      );
      expectUserError(
        await metrl(['train', ...tiny({ domain: 'chess' }), '--dataset', folder, '--out', out]),
        /metadata\.jsonl:1: a shell row, but --domain is chess/,
      );
      expectUserError(
        await metrl(['train', ...TINY, '--dataset', join(root, 'nothing'), '--out', out]),
        /--dataset .*nothing: no such file or folder/,
      );
      expectUserError(
        await metrl(['train', ...TINY, '--dataset', root, '--out', out]),
        /the folder has no metadata\.jsonl/,
      );
      expect(existsSync(out)).toBe(false);
      rmSync(root, { recursive: true, force: true });
    },
    MANY_PROCESSES,
  );
});
