// GRPO step speed for the default training configuration (trainer/config.ts defaults: 4 prompts × 2 accumulation ×
// 8 completions per step), on the shell game with text actions and on chess with image actions: seconds per step
// and their split into rollout / reward / log-probs / update, rollout and learner tokens per second, peak memory.
// Starts from checkpoints/base when it exists (an untrained model rambles to the token limit, which inflates the
// rollout), on the backend initBackend picks (METRL_BACKEND overrides it).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchRow } from './table.ts';
import { initBackend } from '../models/backend.ts';
import { BuiltinPolicy } from '../models/builtin/policy.ts';
import { saveBaseCheckpoint } from '../models/builtin/base-checkpoint.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { getEnv } from '../envs/registry.ts';
import { resolveConfig } from '../trainer/config.ts';
import { loadTrainingPolicy, train } from '../trainer/loop.ts';
import type { TrainRow } from '../trainer/metrics.ts';

const MEASURED_STEPS = 2;

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
  try {
    for (const [domain, modality] of [['shell', 'text'], ['chess', 'image']] as const) {
      const env = await getEnv(domain);
      // One warm-up step, then the measured ones; a 2-episode test split keeps the step-0 evaluation out of the way.
      const config = resolveConfig({}, { steps: 1 + MEASURED_STEPS, testSize: 2, evalEvery: 1000, checkpointEvery: 1000 });
      const setup = await loadTrainingPolicy(base, config);
      const steps: TrainRow[] = [];
      await train({ env, ...setup, config, modality, runDir: join(scratch, `${domain}-${modality}`), resume: false, onEvent: (e) => e.kind === 'step' && steps.push(e.row) });
      setup.policy.dispose();
      const measured = steps.slice(1);
      const mean = (f: (r: TrainRow) => number) => measured.reduce((s, r) => s + f(r), 0) / measured.length;
      const group = `grpo ${domain} ${modality}`;
      const note = `${backend.name}, ${baseNote}, ${config.promptsPerStep * config.gradientAccumulation}×${config.groupSize} completions`;
      rows.push(
        { group, name: 'seconds per step', value: mean((r) => r.time.total), unit: 's', note },
        { group, name: '  rollout', value: mean((r) => r.time.rollout), unit: 's' },
        { group, name: '  reward', value: mean((r) => r.time.reward), unit: 's' },
        { group, name: '  log-probs (reference)', value: mean((r) => r.time.logprobs), unit: 's' },
        { group, name: '  update (forward + backward + AdamW)', value: mean((r) => r.time.update), unit: 's' },
        { group, name: 'rollout tokens/s', value: mean((r) => r.rolloutTokensPerSecond), unit: 'tok/s', note: `mean completion ${mean((r) => r.completionLength).toFixed(1)} tokens` },
        { group, name: 'learner tokens/s', value: mean((r) => r.learnerTokensPerSecond), unit: 'tok/s', note: 'prompt + completion tokens through the learner passes' },
      );
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  rows.push({ group: 'grpo', name: 'peak memory (RSS)', value: process.resourceUsage().maxRSS / 1024, unit: 'MB', note: 'whole bench process' });
  return rows;
}
