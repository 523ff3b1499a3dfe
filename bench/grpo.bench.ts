// GRPO step speed for the default training configuration (trainer/config.ts defaults: 4 prompts × 2 accumulation ×
// 8 completions per step), on the shell game with text actions and on chess with image actions: seconds per step
// and their split into rollout / reward / log-probs / update, rollout and learner tokens per second, peak memory.
// Starts from checkpoints/base when it exists (an untrained model rambles to the token limit, which inflates the
// rollout), on the backend initBackend picks (METRL_BACKEND overrides it). Each step runs on both inference engines
// (config.engine: tfjs, and ONNX Runtime as the Sampler beside the tfjs learner, every core; METRL_BENCH_ENGINES=tfjs
// or =ort picks one), with the process's CPU seconds per step (all threads) and the load average beside the wall
// times, since other work on a shared machine moves the wall times.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchRow } from './table.ts';
import { initBackend } from '../models/backend.ts';
import { BuiltinPolicy } from '../models/builtin/policy.ts';
import { saveBaseCheckpoint } from '../models/builtin/base-checkpoint.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { getEnv } from '../envs/registry.ts';
import { resolveConfig } from '../trainer/config.ts';
import { loadTrainingPolicy, train } from '../trainer/grpo/loop.ts';
import type { TrainRow } from '../trainer/logs/metrics.ts';
import { ENGINES, type Engine } from '../models/engine.ts';

const MEASURED_STEPS = 2;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

export async function run(): Promise<BenchRow[]> {
  const backend = await initBackend(process.env.METRL_BACKEND, null);
  const shipped = join(CHECKPOINTS_DIR, 'base');
  const scratch = mkdtempSync(join(tmpdir(), 'metrl-grpo-bench-'));
  let base = shipped;
  if (!existsSync(join(shipped, 'model.safetensors'))) {
    base = join(scratch, 'base');
    saveBaseCheckpoint(BuiltinPolicy.create({ seed: 0 }), base);
  }
  const baseNote = base === shipped ? 'checkpoints/base' : 'untrained base (no checkpoints/base)';
  const rows: BenchRow[] = [];
  const engines = (process.env.METRL_BENCH_ENGINES ?? ENGINES.join(',')).split(',') as Engine[];
  try {
    for (const [domain, modality] of [
      ['shell', 'text'],
      ['chess', 'image'],
    ] as const) {
      for (const engine of engines) {
        const env = await getEnv(domain);
        // One warm-up step, then the measured ones; a 2-episode test split keeps the step-0 evaluation out of the way.
        const config = resolveConfig(
          {},
          { steps: 1 + MEASURED_STEPS, testSize: 2, evalEvery: 1000, checkpointEvery: 1000, engine },
        );
        const setup = await loadTrainingPolicy(base, config);
        const steps: TrainRow[] = [];
        // CPU seconds of each step (the process, all threads): from the end of the previous step (or of the step-0
        // evaluation) to the step's row.
        const cpu: number[] = [];
        let cpuAt = 0;
        const cpuNow = () => {
          const u = process.cpuUsage();
          return (u.user + u.system) / 1e6;
        };
        let engineLine = '';
        await train({
          env,
          ...setup,
          config,
          modality,
          runDir: join(scratch, `${domain}-${modality}-${engine}`),
          resume: false,
          onEvent: (e) => {
            if (e.kind === 'start') engineLine = e.engine;
            if (e.kind === 'eval' || e.kind === 'checkpoint') cpuAt = cpuNow();
            if (e.kind !== 'step') return;
            steps.push(e.row);
            const now = cpuNow();
            cpu.push(now - cpuAt);
            cpuAt = now;
          },
        });
        setup.policy.dispose();
        const measured = steps.slice(1);
        const mean = (f: (r: TrainRow) => number) => measured.reduce((s, r) => s + f(r), 0) / measured.length;
        const meanCpu = cpu.slice(1).reduce((s, c) => s + c, 0) / measured.length;
        const group = `grpo ${domain} ${modality}, ${engine}`;
        const note = `${engine === 'ort' ? `${engineLine}, learner tfjs ` : ''}${backend.name}, ${baseNote}, ${config.promptsPerStep * config.gradientAccumulation}×${config.groupSize} completions, load ${load()}`;
        process.stderr.write(
          `bench grpo: ${group}: ${measured.map((r) => r.time.total.toFixed(2)).join(' ')} s per step, CPU ${cpu
            .slice(1)
            .map((c) => c.toFixed(2))
            .join(' ')} s (load ${load()})\n`,
        );
        rows.push(
          { group, name: 'seconds per step', value: mean((r) => r.time.total), unit: 's', note },
          {
            group,
            name: 'CPU seconds per step',
            value: meanCpu,
            unit: 's',
            note: 'all threads of the process; less moved by other load than wall time',
          },
          { group, name: '  rollout', value: mean((r) => r.time.rollout), unit: 's' },
          { group, name: '  reward', value: mean((r) => r.time.reward), unit: 's' },
          { group, name: '  log-probs (reference)', value: mean((r) => r.time.logprobs), unit: 's' },
          { group, name: '  update (forward + backward + AdamW)', value: mean((r) => r.time.update), unit: 's' },
          {
            group,
            name: 'rollout tokens/s',
            value: mean((r) => r.rolloutTokensPerSecond),
            unit: 'tok/s',
            note: `mean completion ${mean((r) => r.completionLength).toFixed(1)} tokens`,
          },
          {
            group,
            name: 'learner tokens/s',
            value: mean((r) => r.learnerTokensPerSecond),
            unit: 'tok/s',
            note: 'prompt + completion tokens through the learner passes',
          },
        );
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  rows.push({
    group: 'grpo',
    name: 'peak memory (RSS)',
    value: process.resourceUsage().maxRSS / 1024,
    unit: 'MB',
    note: 'whole bench process',
  });
  return rows;
}
