// `metrl train` on the Qwen-VL fixtures through the real binary: a chess image step on the tfjs engine, whose adapter
// is saved as a PEFT folder with a regex target_modules limited to the language model, and the same step on
// --engine ort (rollouts, log-probs, the tower and the LoRA gradients on ONNX Runtime); and a config.json whose
// model_type the table lacks (a made-up video-only variant) is refused in one line as well.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hfCheckpointCopy, hfScratchDir, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { expectUserError, metrl } from './helpers.ts';

const SLOW = 400_000;
const root = hfScratchDir('qwen-vl-train');
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
