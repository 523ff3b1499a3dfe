// `--engine ort` through the real binary: ONNX Runtime generates (rollouts, reference log-probs, evaluation,
// serve) while tfjs learns. Checked against the tfjs engine, the reference: a training run draws the same completions
// and logs the same rewards and evaluations, its loss statistics within float tolerance (the reference log-probs come
// from another engine); a killed ORT run resumes to exactly the uninterrupted ORT run's metrics (the adapters are
// synced into the session after loading the checkpoint); `evaluate` and `serve` on the trained adapter answer as tfjs
// does. Bad input (an unknown engine, a device that is not there, ORT flags without ORT, a model type without an ONNX graph)
// is one line and exit status 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { projectBindingDir } from '../../models/onnx/ort-binding.ts';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { trainAndKill } from '../helpers/train-and-kill.ts';
import { expectSameAnswers, startServe, type Served } from '../helpers/serve-process.ts';
import { tinyBaseCheckpoint, TINY_ARCHITECTURE } from '../trainer/tiny-base.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';

const SLOW = 300_000;
const root = scratchDir('engine');
// Boxes prompts need more than the tiny base's 256 positions.
const base = tinyBaseCheckpoint(
  BuiltinPolicy.create({ architecture: { ...TINY_ARCHITECTURE, maxContext: 512 }, seed: 1 }),
);
// A reward with a spread inside each group (the tiny model's answers are never right), so that the adapters move and
// the reference log-probs matter: the last character's code modulo 3, halved. Boxes' response is the completion itself.
const reward = join(root, 'last-char.ts');
writeFileSync(
  reward,
  'export default (completion: string): number => (completion.length === 0 ? 0 : completion.charCodeAt(completion.length - 1) % 3) / 2;\n',
);
const TINY = [
  '--domain',
  'boxes',
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
  '--max-completion-tokens',
  '3',
  '--eval-every',
  '2',
  '--checkpoint-every',
  '2',
  '--learning-rate',
  '0.05',
  '--temperature',
  '1',
  '--seed',
  '1',
  '--reward',
  reward,
  '--quiet',
];

const rows = (runDir: string, file = 'metrics.jsonl') =>
  readFileSync(join(runDir, file), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
/** Metrics without wall-clock fields. */
const comparable = (runDir: string) =>
  rows(runDir).map(({ time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest }) =>
    withoutStepTime(rest),
  );

const tfjsRun = join(root, 'tfjs');
const ortRun = join(root, 'ort');

beforeAll(async () => {
  const [a, b] = [
    await metrl(['train', ...TINY, '--steps', '4', '--engine', 'tfjs', '--out', tfjsRun]),
    await metrl(['train', ...TINY, '--steps', '4', '--engine', 'ort', '--threads', '1', '--out', ortRun]),
  ];
  expect(a.stderr).toBe('');
  expect(b.stderr).toBe('');
  expect([a.code, b.code]).toEqual([0, 0]);
}, SLOW);

describe('metrl train --engine ort', () => {
  it('draws the same completions as tfjs and logs the same rewards and evaluations, the loss statistics within float tolerance', () => {
    expect(JSON.parse(readFileSync(join(ortRun, 'config.json'), 'utf8'))).toMatchObject({
      config: { engine: 'ort' },
      ort: { device: 'cpu', threads: 1 },
    });
    expect(rows(ortRun, 'samples.jsonl')).toEqual(rows(tfjsRun, 'samples.jsonl'));
    const [t, o] = [comparable(tfjsRun), comparable(ortRun)];
    expect(o.map((r) => `${r.type}:${r.step}`)).toEqual(t.map((r) => `${r.type}:${r.step}`));
    const train = t.filter((r) => r.type === 'train');
    // The adapters moved (a spread in every step and a KL to the reference): the comparison below is not of zeros.
    expect(train.every((r) => r.rewardStd > 0 && r.gradNorm > 0)).toBe(true);
    expect(train.slice(1).every((r) => r.kl > 1e-3)).toBe(true);
    t.forEach((tr, i) => {
      const or = o[i];
      if (tr.type !== 'train') return expect(or).toEqual(tr);
      const { kl, loss, gradNorm, entropy, ratioMean, trl, ...same } = tr;
      const { kl: okl, loss: oloss, gradNorm: ograd, entropy: oent, ratioMean: oratio, trl: otrl, ...osame } = or;
      expect(osame).toEqual(same);
      // ORT computes the log-probs and the LoRA gradients (models/onnx/builtin/builtin-learner.ts) with another float rounding than
      // tfjs (about 1e-6 in a log-prob); Adam then moves the adapters a little differently, which grows over the steps
      // (measured: gradNorm 0.3112 against 0.3099 at step 4, KL 0.013702 against 0.013715: 1e-3 relative).
      expect(Math.abs(okl - kl)).toBeLessThan(5e-3 * kl + 1e-7);
      expect(oloss).toBeCloseTo(loss, 5);
      expect(oent).toBeCloseTo(entropy, 4);
      expect(oratio).toBeCloseTo(ratioMean, 5);
      // The gradient norm is the norm of a sum of two learner chunks whose losses nearly cancel (-0.062 and +0.063 at
      // step 4), so it magnifies the engines' slightly different Adam trajectories: 0.311 against 0.220 at step 4, while
      // each chunk's gradient, given the same adapters, equals tfjs's within 1e-6 (tests/models/onnx-learner.test.ts
      // checks that on its own). Compared tightly only while the trajectories are still close.
      if (tr.step <= 3) expect(Math.abs(ograd - gradNorm)).toBeLessThan(0.02 * gradNorm);
      expect(otrl.reward).toBe(trl.reward);
    });
  });

  it(
    "resumes a killed run to exactly the uninterrupted run's metrics, and keeps the run's engine",
    async () => {
      const cut = join(root, 'ort-cut');
      await trainAndKill(
        ['train', ...TINY, '--steps', '4', '--engine', 'ort', '--threads', '1', '--out', cut],
        join(cut, 'checkpoints', 'latest'),
        2,
      );
      const resumed = await metrl(['train', '--resume', '--out', cut, '--quiet', '--threads', '1']);
      expect(resumed.stderr).toBe('');
      expect(resumed.code).toBe(0);
      expect(comparable(cut)).toEqual(comparable(ortRun));
      expectUserError(
        await metrl(['train', '--resume', '--out', cut, '--engine', 'tfjs']),
        /--resume: --engine tfjs differs from the run's ort .*only --steps may change/,
      );
    },
    SLOW,
  );

  it(
    'continues a run recorded before the engine was a setting on tfjs',
    async () => {
      // The tfjs run's record without the key, as such runs wrote it (the check comes before anything else is read).
      const old = join(root, 'old');
      mkdirSync(old);
      const info = JSON.parse(readFileSync(join(tfjsRun, 'config.json'), 'utf8'));
      delete info.config.engine;
      writeFileSync(join(old, 'config.json'), JSON.stringify(info));
      expectUserError(
        await metrl(['train', '--resume', '--out', old, '--engine', 'ort']),
        /--resume: --engine ort differs from the run's tfjs/,
      );
    },
    SLOW,
  );
});

describe('evaluate and serve --engine ort', () => {
  it(
    'evaluate answers as tfjs does on the trained adapter, and records the engine',
    async () => {
      const out = (e: string) => join(root, `eval-${e}`);
      const args = (e: string) => [
        'evaluate',
        '--checkpoint',
        ortRun,
        '--domain',
        'boxes',
        '--actions',
        '2',
        '--n',
        '4',
        '--max-tokens',
        '6',
        '--engine',
        e,
        '--quiet',
        '--out',
        out(e),
      ];
      for (const e of ['tfjs', 'ort']) {
        const result = await metrl(args(e));
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
      }
      const answers = (e: string) => rows(out(e), 'boxes-text.jsonl').map((r) => [r.episode_id, r.response]);
      expect(answers('ort')).toHaveLength(4);
      expect(answers('ort')).toEqual(answers('tfjs'));
      expect(JSON.parse(readFileSync(join(out('ort'), 'config.json'), 'utf8')).loaded).toMatchObject({
        adapter_step: 4,
        engine: 'ort',
        ort: { device: 'cpu', threads: null },
      });
    },
    SLOW,
  );

  describe('serve', () => {
    const servers: Served[] = [];
    const urls: Record<string, string> = {};
    beforeAll(async () => {
      for (const e of ['tfjs', 'ort']) {
        const served = await startServe(['--checkpoint', ortRun, '--port', '0', '--engine', e]);
        servers.push(served);
        urls[e] = served.url;
        if (e === 'ort')
          expect(served.stderr()).toMatch(/inference engine: ONNX Runtime [\d.]+ \(cpu, threads: all cores\)/);
      }
    }, SLOW);
    afterAll(() => {
      for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL');
    });

    it("gives tfjs's greedy answer and, for a seed, its sampled ones", async () => {
      const greedyOrt = await expectSameAnswers(urls, [
        { role: 'user', content: 'boxes\nA: apple\nB: pear\nmove apple from A to B\n' },
      ]);
      expect(greedyOrt[0].length).toBeGreaterThan(0);
    });
  });
});

describe('bad input', () => {
  const out = () => join(scratchDir('engine-bad'), 'run');
  const cudaLibrary = join(projectBindingDir(), 'libonnxruntime_providers_cuda.so');

  it(
    'refuses an unknown engine or device in train, evaluate and serve',
    async () => {
      expectUserError(
        await metrl(['train', ...TINY, '--engine', 'foo', '--out', out()]),
        /--engine: unknown engine; expected one of tfjs, ort/,
      );
      expectUserError(
        await metrl(['evaluate', '--checkpoint', base, '--domain', 'boxes', '--engine', 'foo', '--out', out()]),
        /--engine: unknown engine; expected one of tfjs, ort/,
      );
      expectUserError(
        await metrl(['serve', '--checkpoint', base, '--port', '0', '--engine', 'foo']),
        /--engine: unknown engine; expected one of tfjs, ort/,
      );
      expectUserError(
        await metrl(['train', ...TINY, '--engine', 'ort', '--device', 'tpu', '--out', out()]),
        /--device: unknown device; expected one of cpu, cuda, webgpu/,
      );
    },
    SLOW,
  );

  it(
    'refuses ORT flags without ORT, and ORT for a model type without an ONNX graph or a hosted one',
    async () => {
      expectUserError(
        await metrl(['train', ...TINY, '--engine', 'tfjs', '--threads', '2', '--out', out()]),
        /--threads sets ONNX Runtime and applies with --engine ort/,
      );
      expectUserError(
        await metrl(['serve', '--checkpoint', base, '--port', '0', '--engine', 'tfjs', '--device', 'cpu']),
        /--device sets ONNX Runtime and applies with --engine ort/,
      );
      // Hugging Face checkpoints run on ORT too (tests/cli/hf-engine.test.ts); a model type without an ONNX graph does not.
      const mistral = join(scratchDir('engine-mistral'), 'mistral');
      mkdirSync(mistral);
      writeFileSync(join(mistral, 'config.json'), JSON.stringify({ model_type: 'mistral' }));
      const run = out();
      expectUserError(
        await metrl([
          'train',
          '--domain',
          'shell',
          '--modality',
          'text',
          '--checkpoint',
          mistral,
          '--engine',
          'ort',
          '--out',
          run,
        ]),
        /--engine ort: the ONNX Runtime engine has no graph for model type mistral \(it runs the built-in model and llama, qwen2, qwen3, gemma3_text, gemma3, idefics3, qwen2_5_vl, qwen3_vl\); use --engine tfjs/,
      );
      expect(existsSync(run)).toBe(false);
      expectUserError(
        await metrl(['evaluate', '--model', 'baseline:random', '--domain', 'shell', '--engine', 'ort', '--out', out()]),
        /--engine applies to --checkpoint/,
      );
    },
    SLOW,
  );

  it.skipIf(existsSync(cudaLibrary))(
    '--device cuda without the CUDA provider names the install command, leaving nothing behind',
    async () => {
      const run = out();
      const env = { METRL_ORT_CUDA_DIR: join(scratchDir('engine-bad'), 'no-cuda-install') };
      expectUserError(
        await metrl(['train', ...TINY, '--engine', 'ort', '--device', 'cuda', '--out', run], { env }),
        /--device cuda: ONNX Runtime's CUDA execution provider is not installed \(not beside onnxruntime-node, and .*no-cuda-install has none\); run `npx metrl install-cuda`/,
      );
      expect(existsSync(run)).toBe(false);
      expectUserError(
        await metrl(['serve', '--checkpoint', base, '--port', '0', '--engine', 'ort', '--device', 'cuda'], { env }),
        /--device cuda: .*not installed/,
      );
    },
    SLOW,
  );

  // WebGPU's provider ships with onnxruntime-node; a Vulkan driver that cannot start (VK_DRIVER_FILES names the only
  // ICD the loader may use, and its library is not there) leaves it no adapter, on any machine, GPU or lavapipe.
  it(
    '--device webgpu with a Vulkan driver that cannot start says the provider found no GPU, in one line',
    async () => {
      const icd = join(scratchDir('engine-bad'), 'broken_icd.json');
      writeFileSync(
        icd,
        JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: '/nonexistent/libvk.so' } }),
      );
      const run = out();
      expectUserError(
        await metrl(
          [
            'evaluate',
            '--checkpoint',
            base,
            '--domain',
            'boxes',
            '--engine',
            'ort',
            '--device',
            'webgpu',
            '--n',
            '1',
            '--out',
            run,
          ],
          { env: { VK_DRIVER_FILES: icd, VK_ICD_FILENAMES: icd } },
        ),
        /--device webgpu: ONNX Runtime's WebGPU execution provider found no GPU \(.*\); it needs a GPU with Vulkan drivers/,
      );
      expect(existsSync(run)).toBe(false);
    },
    SLOW,
  );
});

/** TRL's step_time is wall-clock seconds too. */
function withoutStepTime<T extends { trl?: Record<string, unknown> }>(row: T): T {
  if (!row.trl) return row;
  const { step_time: _, ...trl } = row.trl;
  return { ...row, trl };
}
