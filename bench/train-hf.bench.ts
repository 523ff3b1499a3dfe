// `npm run bench -- train-hf`: the Hugging Face GRPO step exactly as a user runs it, `metrl train --engine ort` on a
// SmolLM2-135M-shaped Llama with random weights (../shared/peers/hf/make_checkpoint.py writes it), at 1 and 2 threads,
// interleaved with the PyTorch-eager peer (../shared/peers/hf/hf_grpo_step.py, Debian's python3-torch) at the same
// threads on the same checkpoint: the default order "torch:1 metrl:1 torch:2 metrl:2" (METRL_BENCH_ORDER), REPEAT
// rounds of it (METRL_BENCH_REPEAT, default 1). Each metrl run is a child process of
//   metrl train --checkpoint CK --engine ort --domain shell --modality text --steps 2 --prompts-per-step 1
//     --group-size 8 --max-completion-tokens 64 --temperature 1 --test-size 2 --threads N
// and reports, from its metrics.jsonl, step 2's seconds and phases, step 1's, and what opening the learner's sessions
// took before step 1 (time.open). The peer forces 8 completions of 64 tokens from its own prompt (prompt.json beside
// the checkpoint); the CLI's completions are 64 tokens too (random weights never stop early; the rows say the length).
// The load average is printed beside every run. Checkpoint: METRL_BENCH_HF_CHECKPOINT, default
// $TMPDIR/hfpeer/smollm2-135m (written when missing, which needs the peer's torch).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BenchRow } from './table.ts';
import type { TrainRow } from '../trainer/logs/metrics.ts';

const ROOT = resolve(import.meta.dirname, '..');
const PEER = resolve(ROOT, '..', 'shared', 'peers', 'hf');
const PY = '/usr/bin/python3';
const CKPT = process.env.METRL_BENCH_HF_CHECKPOINT ?? join(process.env.TMPDIR ?? tmpdir(), 'hfpeer', 'smollm2-135m');
const ORDER = (process.env.METRL_BENCH_ORDER ?? 'torch:1 metrl:1 torch:2 metrl:2').split(/\s+/).filter(Boolean);
const REPEAT = Number(process.env.METRL_BENCH_REPEAT ?? 1);
const GROUP = 'metrl train, HF (SmolLM2-135M shape)';
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

/** Whether the peer's Python has torch. */
function hasTorch(): boolean {
  return spawnSync(PY, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
}

/** One `metrl train` run at `threads`: its train rows. */
function metrlRun(threads: number): TrainRow[] {
  const out = mkdtempSync(join(tmpdir(), 'metrl-bench-train-hf-'));
  try {
    const args = [
      join(ROOT, 'bin', 'metrl.js'),
      'train',
      ...['--checkpoint', CKPT, '--engine', 'ort', '--domain', 'shell', '--modality', 'text', '--steps', '2'],
      ...['--prompts-per-step', '1', '--group-size', '8', '--max-completion-tokens', '64', '--temperature', '1'],
      ...['--test-size', '2', '--threads', String(threads), '--quiet', '--out', join(out, 'run')],
    ];
    const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', timeout: 1_800_000 });
    if (child.status !== 0) throw new Error(`metrl train --threads ${threads} failed: ${child.stderr.trim()}`);
    return readFileSync(join(out, 'run', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((r) => r.type === 'train');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** The peer's step at `threads` (its median over one measured step after a warm-up). */
function torchRun(threads: number): { total: number; rollout: number; update: number } {
  const args = [join(PEER, 'hf_grpo_step.py'), CKPT, '--threads', String(threads), '--lengths', '64', '--steps', '1'];
  const child = spawnSync(PY, [...args, '--warmup', '1'], { encoding: 'utf8', timeout: 1_800_000 });
  if (child.status !== 0) throw new Error(`hf_grpo_step.py --threads ${threads} failed: ${child.stderr.trim()}`);
  const line = child.stdout.trim().split('\n').at(-1)!;
  return JSON.parse(line).median;
}

export async function run(): Promise<BenchRow[]> {
  const torch = hasTorch();
  if (!existsSync(join(CKPT, 'model.safetensors'))) {
    if (!torch)
      return [
        { group: GROUP, name: 'skipped', value: 0, unit: '', note: `no ${CKPT} and no python3-torch to write it` },
      ];
    const made = spawnSync(PY, [join(PEER, 'make_checkpoint.py'), CKPT], { stdio: 'inherit' });
    if (made.status !== 0) throw new Error(`make_checkpoint.py ${CKPT} failed`);
  }
  const rows: BenchRow[] = [];
  const stepTwo: Record<string, number[]> = {};
  const peer: Record<string, number[]> = {};
  for (let round = 0; round < REPEAT; round++) {
    for (const entry of ORDER) {
      const [side, n] = entry.split(':');
      const threads = Number(n);
      const before = load();
      if (side === 'torch') {
        if (!torch) continue;
        const t = torchRun(threads);
        (peer[threads] ??= []).push(t.total);
        const note = `rollout ${t.rollout.toFixed(2)}, update ${t.update.toFixed(2)}; load ${before} → ${load()}`;
        rows.push({ group: GROUP, name: `PyTorch eager step, ${threads} thread(s)`, value: t.total, unit: 's', note });
        continue;
      }
      const [one, two] = metrlRun(threads);
      (stepTwo[threads] ??= []).push(two.time.total);
      const phases = (r: TrainRow) =>
        `rollout ${r.time.rollout.toFixed(2)}, logprobs ${r.time.logprobs.toFixed(2)}, update ${r.time.update.toFixed(2)}`;
      rows.push(
        {
          group: GROUP,
          name: `step 2, ${threads} thread(s)`,
          value: two.time.total,
          unit: 's',
          note: `${phases(two)}; ${two.completionLength} tokens a completion; load ${before} → ${load()}`,
        },
        { group: GROUP, name: `step 1, ${threads} thread(s)`, value: one.time.total, unit: 's', note: phases(one) },
        {
          group: GROUP,
          name: `learner sessions opened before step 1, ${threads} thread(s)`,
          value: one.time.open ?? Number.NaN,
          unit: 's',
        },
      );
    }
  }
  const mean = (xs: number[] | undefined) => (xs?.length ? xs.reduce((s, x) => s + x, 0) / xs.length : Number.NaN);
  if (stepTwo[1] && stepTwo[2])
    rows.push({
      group: GROUP,
      name: 'step 2 at 2 threads ÷ at 1 thread',
      value: mean(stepTwo[2]) / mean(stepTwo[1]),
      unit: '×',
    });
  for (const t of Object.keys(stepTwo))
    if (peer[t])
      rows.push({
        group: GROUP,
        name: `metrl step 2 ÷ PyTorch step, ${t} thread(s)`,
        value: mean(stepTwo[t]) / mean(peer[t]),
        unit: '×',
      });
  return rows;
}
