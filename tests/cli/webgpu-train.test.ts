// `metrl train --device webgpu` end to end through the real binary, on a tiny Hugging Face fixture (idefics3, chess
// image prompts: the SigLIP tower, the decoder with its caches and adapters kept on the GPU, and the learner all on
// WebGPU) and on a tiny built-in model (boxes text), each against the same run with `--device cpu`: the same samples
// and rewards (the draws are the same code on logits that agree within 1e-4), the loss statistics within float
// tolerance, and the run's config naming the device. Two steps each with an evaluation; a reward with a spread inside
// each group, so the adapters move. On lavapipe Dawn prints two notes on its device limits on stderr, which are all
// the runs print there. Needs WebGPU (tests/helpers/webgpu.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, type CliResult } from './helpers.ts';
import { hfCheckpointCopy, hfScratchDir, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { tinyBaseCheckpoint, TINY_ARCHITECTURE } from '../trainer/tiny-base.ts';
import { WEBGPU_MISSING } from '../helpers/webgpu.ts';

const SLOW = 400_000;

/** stderr without Dawn's notes on lavapipe's limits ("… artificially reduced from 1000000 to 16 …"). */
const ownStderr = (r: CliResult) =>
  r.stderr
    .split('\n')
    .filter((l) => l !== '' && !/^Warning: max\w+ artificially reduced/.test(l))
    .join('\n');

afterAll(() => removeHfCopies());

const rows = (dir: string, file: string) =>
  readFileSync(join(dir, file), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe.skipIf(WEBGPU_MISSING !== null).each([
  ['a Hugging Face checkpoint (idefics3, chess image)', 'hf'],
  ['the built-in model (boxes text)', 'builtin'],
])('metrl train --device webgpu: %s', (_, kind) => {
  const root = hfScratchDir(`webgpu-train-${kind}`);
  const reward = join(root, 'last-char.ts');
  const runs = { cpu: join(root, 'cpu'), webgpu: join(root, 'webgpu') };
  const results: Record<string, CliResult> = {};

  beforeAll(async () => {
    writeFileSync(
      reward,
      'export default (completion: string): number => (completion.length === 0 ? 0 : completion.charCodeAt(completion.length - 1) % 3) / 2;\n',
    );
    const model =
      kind === 'hf'
        ? ['--checkpoint', hfCheckpointCopy('idefics3'), '--domain', 'chess', '--modality', 'image']
        : [
            '--checkpoint',
            // Boxes prompts need more than the tiny base's 256 positions.
            tinyBaseCheckpoint(
              BuiltinPolicy.create({ architecture: { ...TINY_ARCHITECTURE, maxContext: 512 }, seed: 1 }),
            ),
            '--domain',
            'boxes',
            '--modality',
            'text',
            '--actions',
            '2',
          ];
    const args = [
      'train',
      ...model,
      '--engine',
      'ort',
      '--steps',
      '2',
      '--train-size',
      '4',
      '--test-size',
      '2',
      '--eval-every',
      '2',
      '--checkpoint-every',
      '2',
      '--max-completion-tokens',
      '4',
      '--group-size',
      '3',
      '--prompts-per-step',
      '2',
      '--temperature',
      '1',
      '--learning-rate',
      '0.05',
      '--seed',
      '3',
      '--reward',
      reward,
      '--quiet',
    ];
    for (const device of ['cpu', 'webgpu'] as const)
      results[device] = await metrl([...args, '--device', device, '--threads', '1', '--out', runs[device]]);
  }, SLOW);

  it('runs to the end, printing nothing of its own on stderr, and records the device', () => {
    for (const device of ['cpu', 'webgpu'] as const) {
      expect(ownStderr(results[device]), device).toBe('');
      expect(results[device].code, device).toBe(0);
      expect(JSON.parse(readFileSync(join(runs[device], 'config.json'), 'utf8'))).toMatchObject({
        config: { engine: 'ort' },
        ort: { device },
      });
    }
  });

  it('draws the samples and rewards of the CPU run, the loss statistics within float tolerance', () => {
    const strip = (r: Record<string, unknown>) => ({ ...r, seconds: undefined, time: undefined });
    expect(rows(runs.webgpu, 'samples.jsonl').map(strip)).toEqual(rows(runs.cpu, 'samples.jsonl').map(strip));
    const [gpu, cpu] = [rows(runs.webgpu, 'metrics.jsonl'), rows(runs.cpu, 'metrics.jsonl')];
    expect(gpu.length).toBe(cpu.length);
    gpu.forEach((row, i) => {
      for (const key of ['rewardMean', 'accuracy', 'kl', 'loss', 'gradNorm', 'entropy'])
        if (typeof cpu[i][key] === 'number')
          expect(Math.abs(row[key] - cpu[i][key]), `${key} of row ${i}`).toBeLessThan(
            1e-4 * Math.max(1, Math.abs(cpu[i][key])),
          );
    });
  });
});
