// `npm run bench -- gemma-1b`: whether a Gemma 3 1B-shaped checkpoint trains on this machine, and what it costs. The
// bench writes a random-weight Gemma3ForCausalLM of Gemma 3 1B's shape (hidden 1152, 26 layers, 4 heads / 1 KV head
// of 256, intermediate 6912, vocabulary 262,144 tied, sliding window 512 on five layers of six; 1.0 B parameters,
// 4.0 GB of float32) with a tokenizer, then runs one GRPO step of the default configuration (4 prompts × 8
// completions, the completion budget fitted to the task) through the real `metrl train --engine ort` in a child
// process, and reports the step's phases and the child's peak memory (VmHWM, read every 0.2 s while it runs).
// The checkpoint goes to METRL_GEMMA1B_DIR when set (kept and reused), else to a temporary folder removed afterwards.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchRow } from './table.ts';
import { Rng } from '../core/rng.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { PROJECT_ROOT, SHARED_DIR } from '../core/paths.ts';
import { parseHfConfig } from '../models/hf/config.ts';
import { GEMMA3_CAUSAL_LAYOUT } from '../models/gemma3/language-model.ts';
import { randomDecoderTensors, writeHfCheckpoint, type HostTensor } from '../models/hf/write-checkpoint.ts';
import type { DecoderConfig } from '../models/hf/config.ts';
import { expectedDecoderTensors } from '../models/hf/load-decoder.ts';
import { HF_ARCHITECTURES } from '../models/registry.ts';

/** google/gemma-3-1b-it's config.json: the fields that shape the model. */
export const GEMMA3_1B_CONFIG = {
  architectures: ['Gemma3ForCausalLM'],
  model_type: 'gemma3_text',
  attention_bias: false,
  attn_logit_softcapping: null,
  final_logit_softcapping: null,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  hidden_size: 1152,
  initializer_range: 0.02,
  intermediate_size: 6912,
  max_position_embeddings: 32768,
  num_attention_heads: 4,
  num_hidden_layers: 26,
  num_key_value_heads: 1,
  query_pre_attn_scalar: 256,
  rms_norm_eps: 1e-6,
  rope_local_base_freq: 10000,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: 512,
  sliding_window_pattern: 6,
  tie_word_embeddings: true,
  vocab_size: 262144,
  bos_token_id: 2,
  eos_token_id: 1,
  pad_token_id: 0,
};

/** Gemma's turn format (a stand-in tokenizer: the SmolVLM one, whose ids all lie inside Gemma's vocabulary). */
const CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<start_of_turn>' + (message['role'] == 'assistant' and 'model' or message['role']) + '\\n' + message['content'] + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";

const progress = (what: string) =>
  process.stderr.write(`bench gemma-1b: ${what} (${new Date().toISOString().slice(11, 19)})\n`);

/** Write the checkpoint folder; returns its parameter count. */
export function writeGemma1bFolder(dir: string): number {
  return writeGemmaTextFolder(dir, GEMMA3_1B_CONFIG, 'bench-gemma-1b');
}

/** Write a random-weight Gemma 3 text checkpoint of `config`'s shape (float32 on disk) with a tokenizer; its parameter count. */
export function writeGemmaTextFolder(
  dir: string,
  config: Record<string, unknown> & { initializer_range: number },
  seed: string,
  options: { fast?: boolean } = {},
): number {
  const parsed = parseHfConfig(config, HF_ARCHITECTURES);
  const tensors = options.fast
    ? tabledNormalTensors(parsed.text, config.initializer_range, seed)
    : randomDecoderTensors(parsed.text, GEMMA3_CAUSAL_LAYOUT, new Rng(0, seed), config.initializer_range);
  let parameters = 0;
  for (const t of tensors.values()) parameters += t.data.length;
  mkdirSync(dir, { recursive: true });
  writeHfCheckpoint(dir, config, tensors);
  const tokenizer = join(SHARED_DIR, 'fixtures', 'hf', 'tokenizer-smolvlm');
  copyFileSync(join(tokenizer, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  const tc = JSON.parse(readFileSync(join(tokenizer, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  writeJsonAtomic(join(dir, 'tokenizer_config.json'), {
    ...tc,
    chat_template: CHAT_TEMPLATE,
    eos_token: '<end_of_turn>',
    pad_token: '<end_of_turn>',
  });
  return parameters;
}

/**
 * randomDecoderTensors' shapes and statistics (matrices normal(0, σ), Gemma's norms 0) at a few nanoseconds a value:
 * each matrix entry is one of 2^16 normal draws, picked by a xorshift stream. For the GPU check's Gemma 3 4B shape
 * (bench/gpu-gemma.ts), where drawing 3.9 B Box-Muller normals took minutes of its device time; speed figures do not
 * depend on which normals the weights are.
 */
function tabledNormalTensors(c: DecoderConfig, sigma: number, seed: string): Map<string, HostTensor> {
  const rng = new Rng(0, seed);
  const table = Float32Array.from({ length: 1 << 16 }, () => {
    const u = 1 - rng.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next()) * sigma;
  });
  let x = 0x9e3779b9;
  const out = new Map<string, HostTensor>();
  for (const [name, shape] of expectedDecoderTensors(c, GEMMA3_CAUSAL_LAYOUT)) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (shape.length === 2)
      for (let i = 0; i < data.length; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        data[i] = table[x & 0xffff];
      }
    out.set(name, { shape, data });
  }
  return out;
}

/**
 * Run `metrl train` in a child process; its exit code, stderr, wall seconds, peak VmHWM and peak PSS in bytes. PSS
 * counts a page mapped twice (the sampler's and the learner's sessions map one weight file) once, where RSS counts it
 * per mapping.
 */
export async function trainChild(
  args: string[],
): Promise<{ code: number | null; stderr: string; seconds: number; peak: number; peakPss: number }> {
  const start = performance.now();
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin', 'metrl.js'), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let peak = 0;
  let peakPss = 0;
  const poll = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (hwm) peak = Math.max(peak, Number(hwm[1]) * 1024);
      const pss = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${child.pid}/smaps_rollup`, 'utf8'));
      if (pss) peakPss = Math.max(peakPss, Number(pss[1]) * 1024);
    } catch {
      // the child has exited
    }
  }, 200);
  const code = await new Promise<number | null>((done) => child.on('close', done));
  clearInterval(poll);
  return { code, stderr, seconds: (performance.now() - start) / 1000, peak, peakPss };
}

export async function run(): Promise<BenchRow[]> {
  const kept = process.env.METRL_GEMMA1B_DIR;
  const root = mkdtempSync(join(tmpdir(), 'metrl-gemma1b-'));
  const dir = kept ?? join(root, 'gemma-3-1b-shape');
  try {
    if (!existsSync(join(dir, 'model.safetensors'))) {
      progress('writing the checkpoint (4.0 GB)');
      writeGemma1bFolder(dir);
    }
    // A reward with a spread inside each group (a random model never answers right), so the update has work to do.
    const reward = join(root, 'last-char.ts');
    writeFileSync(
      reward,
      'export default (completion: string): number => (completion.length === 0 ? 0 : completion.charCodeAt(completion.length - 1) % 3) / 2;\n',
    );
    const out = join(root, 'run');
    progress('one default-config GRPO step, metrl train --engine ort');
    const result = await trainChild([
      'train',
      '--checkpoint',
      dir,
      '--engine',
      'ort',
      '--domain',
      'shell',
      '--modality',
      'text',
      '--steps',
      '1',
      '--test-size',
      '1',
      '--eval-every',
      '1',
      '--reward',
      reward,
      '--quiet',
      '--out',
      out,
    ]);
    if (result.code !== 0)
      throw new Error(`metrl train exited ${result.code}: ${result.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    const rows = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const step = rows.find((r) => r.type === 'train') as
      | {
          time: Record<string, number>;
          completionLength: number;
          rolloutTokensPerSecond: number;
          learnerTokensPerSecond: number;
        }
      | undefined;
    if (!step) throw new Error('the run logged no training step');
    const load = loadavg()[0].toFixed(1);
    const group = 'gemma 3 1b shape (ort, cpu)';
    const note = `default config, completions ${step.completionLength.toFixed(0)} tokens on average; load ${load}`;
    return [
      {
        group,
        name: 'peak RSS of metrl train',
        value: result.peak / 2 ** 30,
        unit: 'GiB',
        note: 'weights 4.0 GB (float32); machine 24 GB',
      },
      {
        group,
        name: 'peak PSS of metrl train',
        value: result.peakPss / 2 ** 30,
        unit: 'GiB',
        note: 'sampled every 0.2 s; the weight file mapped by two sessions counted once',
      },
      { group, name: 'step: rollout', value: step.time.rollout, unit: 's', note },
      { group, name: 'step: reference and old log-probs', value: step.time.logprobs, unit: 's', note },
      { group, name: 'step: update', value: step.time.update, unit: 's', note },
      { group, name: 'step: total', value: step.time.total, unit: 's', note },
      { group, name: 'rollout tokens/s', value: step.rolloutTokensPerSecond, unit: 'tok/s', note },
      { group, name: 'learner tokens/s', value: step.learnerTokensPerSecond, unit: 'tok/s', note },
      {
        group,
        name: 'whole command (load, 2 evaluations, step)',
        value: result.seconds,
        unit: 's',
        note: `load average ${load}`,
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
