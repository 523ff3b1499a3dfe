// `metrl train` on the Qwen-VL fixtures through the real binary: a chess image step on the tfjs engine, whose adapter
// is saved as a PEFT folder with a regex target_modules limited to the language model, and the same step on
// --engine ort (rollouts, log-probs, the tower and the LoRA gradients on ONNX Runtime); `evaluate` on chess image
// episodes with the trained adapter; `serve` with it on both engines answering a two-image chat request (data: URLs)
// alike; `train --rollout-server` against a `metrl serve` replica of the checkpoint; and a config.json whose
// model_type the table lacks (a made-up video-only variant) is refused in one line as well.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HF_FIXTURES, hfCheckpointCopy, hfScratchDir, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { expectSameAnswers, type Served, startServe } from '../helpers/serve-process.ts';
import { expectUserError, metrl } from './helpers.ts';

const SLOW = 400_000;
const root = hfScratchDir('qwen-vl-train');
const servers: Served[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) if (s.child.exitCode === null) s.child.kill('SIGKILL');
});
afterAll(() => removeHfCopies());

const train = (checkpoint: string, out: string, engine: string) => [
  'train',
  '--checkpoint',
  checkpoint,
  '--domain',
  'chess',
  '--modality',
  'image',
  '--steps',
  '1',
  '--train-size',
  '2',
  '--test-size',
  '1',
  '--eval-every',
  '1',
  '--checkpoint-every',
  '1',
  '--max-completion-tokens',
  '4',
  '--group-size',
  '2',
  '--prompts-per-step',
  '1',
  '--seed',
  '5',
  '--engine',
  engine,
  '--out',
  out,
  '--quiet',
];

describe.each(['qwen2_5_vl', 'qwen3_vl'])('metrl train --checkpoint <%s fixture>', (name) => {
  it(
    'runs a chess image step on tfjs and saves a PEFT adapter of the language model',
    async () => {
      const out = join(root, `${name}-tfjs`);
      const r = await metrl(train(hfCheckpointCopy(name), out, 'tfjs'));
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const metrics = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(metrics.some((m) => m.type === 'train' && m.step === 1)).toBe(true);
      const step = join(out, 'checkpoints', 'step-1');
      expect(existsSync(join(step, 'adapter_model.safetensors'))).toBe(true);
      const adapter = JSON.parse(readFileSync(join(step, 'adapter_config.json'), 'utf8'));
      expect(typeof adapter.target_modules).toBe('string');
      expect(adapter.target_modules).toMatch(/^model\\\.language_model\\\./);
    },
    SLOW,
  );

  it(
    'runs the whole step with --engine ort (rollouts, log-probs, tower and LoRA gradients on ONNX Runtime)',
    async () => {
      const out = join(root, `${name}-ort`);
      const r = await metrl([...train(hfCheckpointCopy(name), out, 'ort'), '--threads', '1']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const run = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
      expect(run.config.engine).toBe('ort');
      expect(existsSync(join(out, 'checkpoints', 'step-1', 'adapter_model.safetensors'))).toBe(true);
    },
    SLOW,
  );
});

describe('metrl train --rollout-server on the qwen3_vl fixture', () => {
  it(
    'sends the chess image prompts to a metrl serve replica of the checkpoint as chat messages (data: URLs) and trains on its samples',
    async () => {
      const checkpoint = hfCheckpointCopy('qwen3_vl');
      const served = await startServe([
        '--checkpoint',
        checkpoint,
        '--enable-lora',
        '--logprobs-mode',
        'processed_logprobs',
        '--port',
        '0',
      ]);
      servers.push(served);
      const out = join(root, 'qwen3_vl-rollout');
      const r = await metrl([...train(checkpoint, out, 'ort'), '--rollout-server', served.url]);
      expect(r.code, r.stderr).toBe(0);
      const rows = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .filter((row) => row.type === 'train');
      expect(rows.map((row) => row.step)).toEqual([1]);
      // The group was sampled on the replica by the step's adapter version (the trainer refuses a prompt the server
      // tokenised otherwise, so this also says the server's image tokens were the trainer's).
      expect(rows[0].rollout.servers).toEqual([served.url.replace(/\/v1$/, '')]);
      expect(rows[0].rollout.adapterVersions).toEqual([0]);
      expect(existsSync(join(out, 'checkpoints', 'step-1', 'adapter_model.safetensors'))).toBe(true);
    },
    SLOW,
  );
});

describe.each(['qwen2_5_vl', 'qwen3_vl'])('metrl evaluate and serve on the %s fixture', (name) => {
  it(
    'evaluates chess image episodes with a trained adapter, and serves an image chat the same on both engines',
    async () => {
      const checkpoint = hfCheckpointCopy(name);
      const run = join(root, `${name}-for-eval`);
      const trained = await metrl(train(checkpoint, run, 'ort'));
      expect([trained.code, trained.stderr]).toEqual([0, '']);
      const adapter = join(run, 'checkpoints', 'step-1');
      const out = join(root, `${name}-eval`);
      const evaluated = await metrl([
        'evaluate',
        ...['--checkpoint', checkpoint, '--adapter', adapter, '--domain', 'chess', '--modality', 'image'],
        ...['--n', '2', '--max-tokens', '4', '--seed', '2', '--out', out, '--quiet'],
      ]);
      expect([evaluated.code, evaluated.stderr]).toEqual([0, '']);
      const rows = readFileSync(join(out, 'chess-image.jsonl'), 'utf8').trim().split('\n');
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(JSON.parse(row)).toMatchObject({ modality: 'image', status: 'ok' });
      // One user message with two images as data: URLs, as an OpenAI client sends them.
      const png = (file: string) =>
        `data:image/png;base64,${readFileSync(join(HF_FIXTURES, name, 'preprocess', file)).toString('base64')}`;
      const messages = [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Which piece moved? ' },
            { type: 'image_url', image_url: { url: png('image_a.png') } },
            { type: 'image_url', image_url: { url: png('image_b.png') } },
          ],
        },
      ];
      const urls: Record<string, string> = {};
      for (const engine of ['ort', 'tfjs']) {
        const served = await startServe([
          '--checkpoint',
          checkpoint,
          '--adapter',
          adapter,
          '--engine',
          engine,
          '--port',
          '0',
        ]);
        servers.push(served);
        urls[engine] = served.url;
      }
      await expectSameAnswers(urls, messages);
    },
    SLOW,
  );
});

describe('a Qwen-VL config.json metrl has no table entry for', () => {
  it(
    'a made-up video-only model_type is one line, exit 2',
    async () => {
      const dir = hfCheckpointCopy('qwen2_5_vl');
      const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, model_type: 'qwen2_5_vl_video' }));
      const r = await metrl(train(dir, join(root, 'video'), 'tfjs'));
      expectUserError(r, /unsupported architecture qwen2_5_vl_video/);
    },
    SLOW,
  );
});
