// The project's own GRPO step with forced completion lengths, for the PyTorch peer (PEER_METRL of
// ../shared/peers/torch-grpo-step.sh; the peer's metrl_grpo_forced.mts imports modules that have since moved).
// trainer/grpo/loop.ts train() on the default configuration (4 prompts x 8 completions, T = 0.5, LoRA r 16, beta 0.04,
// learnerBatch 8 / learnerTokens 2048, from checkpoints/base, WASM backend) with one change: rollouts ignore EOS, so
// every completion is exactly N tokens long (equal work with torch_grpo_bench.py). The override wraps the policy's
// sampleGroups (the tfjs engine's, or the ONNX Runtime sampler's) with a tokenizer whose EOS id can never be drawn;
// nothing else is touched. Run from the checkout:
//   [METRL_ENGINE=ort|tfjs] [METRL_THREADS=N] [METRL_DEVICE=cpu|cuda|webgpu] node bin/run-ts.js bench/peer-grpo-forced.ts [MEASURED_STEPS=3] [chess:376,shell:101]
// METRL_ENGINE: the training engine (default: the built-in model's, ort); METRL_THREADS: the cores ONNX Runtime uses, as
// --threads (default every core; N ≥ 2: N one-thread sessions on the main thread and workers, docs/engines.md
// "Threads"; the tfjs WASM backend uses one core whatever it says); METRL_DEVICE: ONNX Runtime's device, as --device
// (METRL_BACKEND: the tfjs backend, as --backend).
// Prints one JSON line per domain: per-step rollout / reward / logprobs / update / total seconds (after 1 warm-up step),
// and the CPU seconds of rollout, logprobs and update (the ORT sampler's calls; the update: the rest of the step) and of
// the ORT learner's gradient pass within the update.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../models/backend.ts';
import { getEnv } from '../envs/registry.ts';
import { resolveConfig } from '../trainer/config.ts';
import { loadTrainingPolicy, train } from '../trainer/grpo/loop.ts';
import { sampleGroups } from '../models/builtin/sampling.ts';
import { BuiltinPolicy } from '../models/builtin/policy.ts';
import { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import { BuiltinOrtLearner } from '../models/onnx/builtin/builtin-learner.ts';
import type { Engine } from '../models/engine.ts';
import { checkDevice, type Device } from '../models/onnx/device.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import type { TrainRow } from '../trainer/logs/metrics.ts';
import type { EncodedPrompt, SamplingOptions } from '../models/types.ts';
import type { Rng } from '../core/rng.ts';

const measured = Number(process.argv[2] ?? 3);
const lengths: Record<string, number> = Object.fromEntries(
  (process.argv[3] ?? 'chess:376,shell:101')
    .split(',')
    .map((s) => s.split(':'))
    .map(([d, n]) => [d, Number(n)]),
);
const backend = await initBackend(process.env.METRL_BACKEND ?? 'wasm', null);
const engine = process.env.METRL_ENGINE as Engine | undefined;
const threads = process.env.METRL_THREADS ? Number(process.env.METRL_THREADS) : undefined;
const device = process.env.METRL_DEVICE as Device | undefined;
if (device) checkDevice(device);
// The ONNX Runtime sampler draws with its policy's tokenizer: during its sampleGroups the policy's is the EOS-less one.
const ortSampleGroups = BuiltinOrtSampler.prototype.sampleGroups;
BuiltinOrtSampler.prototype.sampleGroups = function (
  this: BuiltinOrtSampler,
  ...args: Parameters<BuiltinOrtSampler['sampleGroups']>
) {
  const policy = this.policy;
  const own = policy.tokenizer;
  Object.defineProperty(policy, 'tokenizer', {
    value: Object.create(own, { eos: { value: -1 } }),
    configurable: true,
    writable: true,
  });
  try {
    return ortSampleGroups.apply(this, args);
  } finally {
    Object.defineProperty(policy, 'tokenizer', { value: own, configurable: true, writable: true });
  }
};
// CPU seconds (process.cpuUsage: every thread of this process) spent in rollouts and in reference log-probs; the update's
// are the step's CPU seconds less those (the reward is microseconds). For a loaded machine, where wall times say little.
const cpuSeconds = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};
const phaseCpu = { rollout: 0, logprobs: 0, gradients: 0 };
const timed = <A extends unknown[], R>(phase: keyof typeof phaseCpu, f: (this: unknown, ...args: A) => R) =>
  function (this: unknown, ...args: A): R {
    const c0 = cpuSeconds();
    try {
      return f.apply(this, args);
    } finally {
      phaseCpu[phase] += cpuSeconds() - c0;
    }
  };
BuiltinOrtSampler.prototype.sampleGroups = timed('rollout', BuiltinOrtSampler.prototype.sampleGroups);
BuiltinOrtSampler.prototype.tokenLogProbsMany = timed('logprobs', BuiltinOrtSampler.prototype.tokenLogProbsMany);
// Within the update: the learner's gradient pass (the rest is the loss closures' bookkeeping, AdamW, the sampler's LoRA sync).
BuiltinOrtLearner.prototype.lossGradientsSum = timed('gradients', BuiltinOrtLearner.prototype.lossGradientsSum);
const scratch = mkdtempSync(join(tmpdir(), 'metrl-forced-'));
try {
  for (const [domain, modality] of [
    ['shell', 'text'],
    ['chess', 'image'],
  ] as const) {
    if (!lengths[domain]) continue;
    const env = await getEnv(domain);
    const config = resolveConfig(
      {},
      {
        ...(engine ? { engine } : {}),
        steps: 1 + measured,
        testSize: 2,
        evalEvery: 1000,
        checkpointEvery: 1000,
        maxCompletionTokens: lengths[domain],
      },
    );
    const setup = await loadTrainingPolicy(join(CHECKPOINTS_DIR, 'base'), config);
    const policy = setup.policy;
    if (!(policy instanceof BuiltinPolicy)) throw new Error('checkpoints/base is not the built-in model');
    const neverEos = Object.create(policy.tokenizer, { eos: { value: -1 } });
    policy.sampleGroups = (prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng) =>
      sampleGroups(policy, neverEos, policy.lora, prompts, group, options, rng);
    const rows: TrainRow[] = [];
    const cpu: { rollout: number; logprobs: number; update: number; gradients: number }[] = [];
    let cpu0 = process.cpuUsage();
    let t0 = performance.now();
    const cpuShare: number[] = [];
    await train({
      env,
      ...setup,
      config,
      modality,
      runDir: join(scratch, domain),
      resume: false,
      ort: threads || device ? { threads, device } : undefined,
      onEvent: (e) => {
        if (e.kind !== 'step') return;
        rows.push(e.row);
        const c = process.cpuUsage(cpu0);
        cpuShare.push((c.user + c.system) / 1000 / (performance.now() - t0));
        const step = (c.user + c.system) / 1e6;
        cpu.push({
          rollout: phaseCpu.rollout,
          logprobs: phaseCpu.logprobs,
          update: step - phaseCpu.rollout - phaseCpu.logprobs,
          gradients: phaseCpu.gradients,
        });
        phaseCpu.rollout = phaseCpu.logprobs = phaseCpu.gradients = 0;
        cpu0 = process.cpuUsage();
        t0 = performance.now();
      },
    });
    policy.dispose();
    const m = rows.slice(1);
    console.log(
      JSON.stringify({
        domain,
        modality,
        backend: backend.name,
        engine: engine ?? 'default (ort)',
        device: device ?? 'cpu',
        threads: threads ?? 'all',
        completionTokens: lengths[domain],
        completionLength: m.map((r) => r.completionLength),
        rollout: m.map((r) => r.time.rollout),
        reward: m.map((r) => r.time.reward),
        logprobs: m.map((r) => r.time.logprobs),
        update: m.map((r) => r.time.update),
        total: m.map((r) => r.time.total),
        cpuCoresUsed: cpuShare.slice(1).map((x) => Number(x.toFixed(2))),
        cpuSeconds: Object.fromEntries(
          (['rollout', 'logprobs', 'update', 'gradients'] as const).map((k) => [
            k,
            cpu.slice(1).map((x) => Number(x[k].toFixed(2))),
          ]),
        ),
        rolloutTokensPerSecond: m.map((r) => r.rolloutTokensPerSecond),
        learnerTokensPerSecond: m.map((r) => r.learnerTokensPerSecond),
      }),
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
