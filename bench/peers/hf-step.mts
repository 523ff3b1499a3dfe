// metrl's side of one GRPO step on a Hugging Face checkpoint (peer of ../shared/peers/hf/hf_grpo_step.py), phase by
// phase: a copy of ../shared/peers/hf/metrl_hf_step.mts whose update runs on the engine's learner (--engine ort: the
// ONNX Runtime learner, models/onnx/hf/hf-learner.ts; tfjs: the policy), and which loads the checkpoint as the CLI
// does for that engine (host-held weights under ort). Through metrl's own modules imported by path from the checkout (cwd): HfPolicy (models/hf/policy.ts) loaded as the CLI loads it,
// LoRA r 16 / alpha 32 on its default targets (q, k, v, o, gate, up, down), and the trainer's pieces for the update.
//   rollout    the policy's sampleGroups (tfjs engine) or HfOrtSampler.sampleGroups (--engine ort: ONNX Runtime): the
//              prompt (prompt.json beside the checkpoint) prefilled once, its cache repeated for G = 8 rows, cached
//              decoding at temperature 1 (top-p 1), every completion forced to N tokens (the tokenizer's EOS ids
//              emptied, so no row stops; checked);
//   reference  tokenLogProbs with LoRA off, no gradient: the policy's (tfjs, packed [prompt | c1 … c8] row,
//              models/hf/score.ts) or the ORT sampler's (prefill once, completions batched against its cache), as
//              trainer/grpo/loop.ts referenceAndOldLogProbs calls it;
//   update     as trainer/grpo/loop.ts updatePolicy with μ = 1: summedLossGradients over the engine's learner (ort:
//              HfOrtLearner, forward + backward graphs; tfjs: autodiff through the policy's tokenLogProbs), grpoLoss (grpo, ε 0.2, β 0.04, k3 KL; old = detached own log-probs), the sums read
//              as the trainer reads them, global-norm clip 1, AdamW (2e-4, 0.9 / 0.999, 1e-8, no decay), syncLora (ort).
// --threads sets ONNX Runtime's threads (ort only; tfjs WASM runs one). Run from the metrl checkout:
//   node_modules/.bin/tsx bench/peers/hf-step.mts CKPT [--engine tfjs|ort] [--threads N]
//     [--lengths 64,128] [--steps 1] [--warmup 1]
// Prints one JSON line per length: each measured step's phase seconds (wall) and CPU seconds, medians, tokens/s, peak RSS.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { imp, tf } from './checkout.mts';
import { median, peerStep } from './peer-step.mts';
const { initBackend } = await imp('models/backend.ts');
const { loadBaseModel } = await imp('models/registry.ts');
const { HfOrtSampler } = await imp('models/onnx/hf/hf-sampler.ts');
const { HfOrtLearner } = await imp('models/onnx/hf/hf-learner.ts');
const { AdamW } = await imp('trainer/adamw.ts');
const { Rng } = await imp('core/rng.ts');

const argv = process.argv.slice(2);
const flag = (name: string, dflt: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
};
const ckpt = argv[0];
const engine = flag('engine', 'tfjs');
const threads = Number(flag('threads', '1'));
const lengths = flag('lengths', '64,128').split(',').map(Number);
const steps = Number(flag('steps', '1'));
const warmup = Number(flag('warmup', '1'));
const G = 8;

const backend = await initBackend(process.env.METRL_BACKEND ?? 'wasm', null);
if (tf.getBackend() !== backend.tfBackend)
  throw new Error(`two tfjs instances: ${tf.getBackend()} vs ${backend.tfBackend}`);
/** The process's peak resident memory so far (VmHWM), in MB. */
const peakRssMB = () => (process.resourceUsage().maxRSS * 1024) / 2 ** 20;

const t0 = performance.now();
const policy = await loadBaseModel(ckpt, { hostWeights: engine === 'ort' });
const loadSeconds = (performance.now() - t0) / 1000;
(policy.kit.tokenizer as { eosIds: number[] }).eosIds = []; // forced lengths: no row can stop
policy.attachLora({ r: 16, alpha: 32 }, new Rng(0, 'hf-peer-lora'));
const vars = policy.trainableVariables('lora');
const optimizer = new AdamW(vars, { learningRate: 2e-4, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 });
const ortSampler = engine === 'ort' ? new HfOrtSampler(policy, { threads }) : null;
// As metrl train does (models/engine.ts openEngine): the host's projections go once ORT maps them.
ortSampler?.releaseHostWeights();
const sampler = ortSampler ?? policy;
const learner = engine === 'ort' ? new HfOrtLearner(policy, { threads }) : policy;
const prompt = { tokens: JSON.parse(readFileSync(join(ckpt, 'prompt.json'), 'utf8')).tokens as number[], images: [] };
const rng = new Rng(1, 'hf-peer-sampling');

const setup = { sampler, learner, optimizer, vars, syncLora: engine === 'ort', group: G, rng };
function step(n: number) {
  const hwm = [peakRssMB()];
  const timed = peerStep(setup, prompt, n, () => hwm.push(peakRssMB()));
  return { ...timed, peakRssMBAfter: { rollout: hwm[1], reference: hwm[2], update: hwm[3] } };
}

for (const n of lengths) {
  for (let i = 0; i < warmup; i++) step(Math.min(n, 8));
  const done = Array.from({ length: steps }, () => step(n));
  const med = Object.fromEntries(
    (['rollout', 'reference', 'update', 'total'] as const).map((k) => [k, median(done.map((s) => s[k]))]),
  );
  const Pn = prompt.tokens.length;
  console.log(
    JSON.stringify({
      side: 'metrl',
      engine,
      threads: engine === 'ort' ? threads : 1,
      completionTokens: n,
      promptTokens: Pn,
      group: G,
      steps: done,
      median: med,
      tokensPerSecond: {
        rollout: (G * n) / med.rollout,
        reference: (Pn + G * n) / med.reference,
        update: (Pn + G * n) / med.update,
      },
      cpuSecondsPerStep: median(done.map((s) => s.cpu.total)),
      loadSeconds,
      peakRssMB: peakRssMB(),
      loadavg: loadavg().map((x) => x.toFixed(2)),
      backend: backend.name,
      note: engine === 'ort' ? 'every phase on ONNX Runtime (AdamW on tfjs)' : 'all phases on tfjs WASM (1 thread)',
    }),
  );
}
sampler !== policy && (sampler as { dispose(): void }).dispose();
learner !== policy && (learner as { dispose(): void }).dispose();
policy.dispose();
