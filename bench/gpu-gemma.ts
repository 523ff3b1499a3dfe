// The papers' text model on a device, prepared for a machine with a GPU (the `device` tool's; bench/device-run.sh cuda
// runs it): writes a random-weight Gemma 3 text checkpoint of 4B's or 1B's shape with `dtype: bfloat16` in its
// config.json (so that --device cuda|webgpu keeps its projections 16-bit), then runs `metrl train` on it for a few
// default-configuration GRPO steps with LoRA r 16 on `--device DEVICE`, reading the GPU's memory in use (nvidia-smi,
// every 0.5 s) and the process's peak RSS while it runs. Prints one JSON line: each step's phases from metrics.jsonl,
// the peaks, and the run's exit status with its last error line (a device that cannot start or hold the model says so
// in one line, which is a result too). Size `tiny` (2 layers, hidden 256) checks the script itself on any machine.
//   node .dev/gpu-gemma.mjs 4b cuda [STEPS=2]     (bundled by bench/device-bundle.sh)
//   node_modules/.bin/tsx bench/gpu-gemma.ts tiny cpu 1
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../core/paths.ts';
import { GEMMA3_1B_CONFIG, writeGemmaTextFolder } from './gemma-1b.bench.ts';

/** google/gemma-3-4b-it's text_config: the fields that shape the language model (3.9 B parameters with its 262k vocabulary). */
const GEMMA3_4B_TEXT = {
  ...GEMMA3_1B_CONFIG,
  hidden_size: 2560,
  intermediate_size: 10240,
  num_hidden_layers: 34,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  head_dim: 256,
  query_pre_attn_scalar: 256,
  sliding_window: 1024,
  vocab_size: 262208,
  rope_scaling: { rope_type: 'linear', factor: 8 },
  max_position_embeddings: 131072,
};
const TINY = {
  ...GEMMA3_1B_CONFIG,
  hidden_size: 256,
  intermediate_size: 512,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 128,
  query_pre_attn_scalar: 128,
};
const SIZES: Record<string, Record<string, unknown> & { initializer_range: number }> = {
  '4b': GEMMA3_4B_TEXT,
  '1b': GEMMA3_1B_CONFIG,
  tiny: TINY,
};

const [size = '4b', device = 'cuda', stepsArg = '2'] = process.argv.slice(2);
const config = SIZES[size];
if (!config) throw new Error(`size ${size}: one of ${Object.keys(SIZES).join(', ')}`);
const steps = Number(stepsArg);
const say = (what: string) => process.stderr.write(`gpu-gemma: ${what} (${new Date().toISOString().slice(11, 19)})\n`);

const root = process.env.GPU_GEMMA_DIR ?? join(tmpdir(), 'metrl-gpu-gemma');
const dir = join(root, `gemma-3-${size}-shape`);
let parameters: number | null = null;
if (!existsSync(join(dir, 'model.safetensors'))) {
  say(`writing the ${size} checkpoint`);
  parameters = writeGemmaTextFolder(dir, { ...config, dtype: 'bfloat16' }, `gpu-gemma-${size}`, { fast: true });
}
// Plain JavaScript: the bundled CLI (bench/device-bundle.sh) has no TypeScript loader for a reward module.
const reward = join(root, 'last-char.mjs');
writeFileSync(
  reward,
  'export default (completion) => (completion.length === 0 ? 0 : completion.charCodeAt(completion.length - 1) % 3) / 2;\n',
);
const out = join(root, `run-${size}-${device}-${Date.now()}`);

let gpuPeakMiB: number | null = null;
const gpuPoll = setInterval(() => {
  const q = spawn('nvidia-smi', ['--query-gpu=memory.used', '--format=csv,noheader,nounits'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let text = '';
  q.stdout.on('data', (d: Buffer) => (text += d.toString()));
  q.on('error', () => {});
  q.on('close', () => {
    const used = Number(text.trim().split('\n')[0]);
    if (Number.isFinite(used) && text.trim() !== '') gpuPeakMiB = Math.max(gpuPeakMiB ?? 0, used);
  });
}, 500);

say(`metrl train --device ${device}, ${steps} steps`);
const start = performance.now();
const args = [
  'train',
  '--checkpoint',
  dir,
  '--device',
  device,
  '--domain',
  'shell',
  '--modality',
  'text',
  '--steps',
  String(steps),
  '--test-size',
  '1',
  '--eval-every',
  String(steps),
  '--reward',
  reward,
  '--quiet',
  '--out',
  out,
];
const child = spawn(
  process.execPath,
  [...process.execArgv, join(PROJECT_ROOT, process.env.GPU_GEMMA_METRL ?? join('bin', 'metrl.js')), ...args],
  { stdio: ['ignore', 'ignore', 'pipe'] },
);
let stderr = '';
child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
let hostPeak = 0;
const hostPoll = setInterval(() => {
  try {
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
    if (hwm) hostPeak = Math.max(hostPeak, Number(hwm[1]) * 1024);
  } catch {
    // the child has exited
  }
}, 200);
const code = await new Promise<number | null>((done) => child.on('close', done));
clearInterval(gpuPoll);
clearInterval(hostPoll);
const metrics = existsSync(join(out, 'metrics.jsonl'))
  ? readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  : [];
const trainRows = metrics
  .filter((r) => r.type === 'train')
  .map((r) => ({
    step: r.step,
    time: r.time,
    completionLength: r.completionLength,
    rolloutTokensPerSecond: r.rolloutTokensPerSecond,
    learnerTokensPerSecond: r.learnerTokensPerSecond,
  }));
console.log(
  JSON.stringify({
    size,
    device,
    parameters,
    exit: code,
    error:
      stderr
        .split('\n')
        .filter((l) => l.startsWith('metrl: '))
        .pop() ?? null,
    seconds: (performance.now() - start) / 1000,
    steps: trainRows,
    gpuPeakMiB,
    hostPeakGiB: hostPeak / 2 ** 30,
    load: loadavg()[0],
  }),
);
