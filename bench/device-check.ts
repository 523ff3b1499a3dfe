// The GPU paths checked against the CPU on a machine that has a GPU (the `device` tool's machine; docs/engines.md
// "Devices"): the default chess image step's model (the shipped base with perturbed LoRA adapters, bench/chess-step.ts)
// run on ONNX Runtime's CPU provider and on its WebGPU provider (`--device webgpu`): the largest difference of the
// completion log-probs of the same sequences, whether greedy completions are identical, how many tokens of a seeded
// sampled rollout are identical, the learner's LoRA gradients for one group, and the time of each; and the tfjs WASM
// forward against ORT's CPU one. Nothing here is a pass/fail test (tests/models/webgpu-builtin.test.ts is, on
// lavapipe); it prints the figures docs/engines.md and docs/performance.md report, one JSON line per check, and names
// a check that could not run instead of stopping (bench/device-run.sh webgpu runs it with 16 and 48 tokens).
//   node bin/run-ts.js bench/device-check.ts [GREEDY_TOKENS=64] [ROLLOUT_TOKENS=376]
import * as tf from '@tensorflow/tfjs';
import { checkDevice, type Device } from '../models/onnx/device.ts';
import { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import { BuiltinOrtLearner } from '../models/onnx/builtin/builtin-learner.ts';
import { grpoLoss } from '../trainer/loss/loss.ts';
import { Rng } from '../core/rng.ts';
import type { Completion, SequenceBatchItem, TokenLogProbs } from '../models/types.ts';
import { chessStep, forcedLength, GROUP, load } from './chess-step.ts';

const greedyTokens = Number(process.argv[2] ?? 64);
const rolloutTokens = Number(process.argv[3] ?? 376);
const step = await chessStep();
if (!step) throw new Error('checkpoints/base is missing');
const { policy, prompts } = step;

const seconds = (t0: number) => Number(((performance.now() - t0) / 1000).toFixed(3));
const flat = (lp: TokenLogProbs): Float32Array => lp.logProbs.mul(lp.mask).dataSync() as Float32Array;
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const sameTokens = (a: Completion[][], b: Completion[][]) => {
  let same = 0;
  let all = 0;
  a.flat().forEach((c, i) => {
    const d = b.flat()[i];
    all += c.tokens.length;
    for (let j = 0; j < c.tokens.length && c.tokens[j] === d.tokens[j]; j++) same++;
  });
  return { identicalPrefixTokens: same, tokens: all };
};
const print = (o: Record<string, unknown>) => console.log(JSON.stringify({ ...o, load: load() }));

/** One ORT device's figures: greedy completions, the log-probs of the CPU's greedy sequences, a seeded group rollout. */
function ortRun(device: Device, items: SequenceBatchItem[] | null) {
  const sampler = forcedLength(
    new BuiltinOrtSampler(policy, { device, threads: device === 'cpu' ? 1 : undefined }),
    step!,
  );
  let t0 = performance.now();
  const greedy = sampler.sampleGroups(
    prompts,
    1,
    { temperature: 0, topP: 1, maxNewTokens: greedyTokens },
    new Rng(0, 'greedy'),
  );
  const greedyTime = seconds(t0);
  const scored = items ?? greedy.flat().map((c, i) => ({ prompt: prompts[i], completion: c.tokens }));
  t0 = performance.now();
  const lp = flat(sampler.tokenLogProbs(scored, { useLora: true, temperature: 1 }));
  const scoreTime = seconds(t0);
  t0 = performance.now();
  const sampled = sampler.sampleGroups(
    prompts,
    GROUP,
    { temperature: 0.5, topP: 1, maxNewTokens: rolloutTokens },
    new Rng(1, 'rollout'),
  );
  const rolloutTime = seconds(t0);
  sampler.dispose();
  return { greedy, scored, lp, sampled, greedyTime, scoreTime, rolloutTime };
}

const cpu = ortRun('cpu', null);
print({
  check: 'ort cpu (1 thread)',
  greedySeconds: cpu.greedyTime,
  scoreSeconds: cpu.scoreTime,
  rolloutSeconds: cpu.rolloutTime,
  rolloutTokens: GROUP * prompts.length * rolloutTokens,
});
try {
  checkDevice('webgpu');
  const gpu = ortRun('webgpu', cpu.scored);
  print({
    check: 'ort webgpu vs cpu',
    logProbMaxAbsDiff: maxDiff(cpu.lp, gpu.lp),
    greedyIdentical: cpu.greedy.flat().every((c, i) => c.tokens.join() === gpu.greedy.flat()[i].tokens.join()),
    sampled: sameTokens(cpu.sampled, gpu.sampled),
    greedySeconds: gpu.greedyTime,
    scoreSeconds: gpu.scoreTime,
    rolloutSeconds: gpu.rolloutTime,
  });
} catch (e) {
  print({ check: 'ort webgpu vs cpu', error: String((e as Error).message ?? e) });
}

// The ORT learner (`train --device webgpu` runs it there too): the LoRA gradients of the GRPO loss for one group of the
// sampled rollout, on the CPU provider and on WebGPU.
const group = cpu.sampled[0].map((c) => ({ prompt: prompts[0], completion: c.tokens }));
const variables = policy.trainableVariables('lora');
const learnerRun = (device: Device) => {
  const learner = new BuiltinOrtLearner(policy, { device, threads: device === 'cpu' ? 1 : undefined });
  const B = group.length;
  const advantages = tf.tensor1d(Array.from({ length: B }, (_, i) => (i % 2 ? 1 : -1)));
  const loss = (lp: TokenLogProbs) =>
    grpoLoss(
      {
        logProbs: lp.logProbs,
        oldLogProbs: tf.tensor(lp.logProbs.dataSync(), lp.logProbs.shape) as tf.Tensor2D,
        refLogProbs: null,
        mask: lp.mask,
        advantages,
      },
      {
        epsilon: 0.2,
        beta: 0,
        lossType: 'grpo',
        maxCompletionTokens: rolloutTokens,
        totalSequences: B,
        totalTokens: B * rolloutTokens,
      },
    ).loss;
  learner.lossGradients(group, { useLora: true, temperature: 0.5 }, loss, variables); // session build
  const t0 = performance.now();
  const got = learner.lossGradients(group, { useLora: true, temperature: 0.5 }, loss, variables);
  const time = seconds(t0);
  const grads = variables.map((v) => got.grads[v.name].dataSync() as Float32Array);
  learner.dispose();
  return { grads, time };
};
const cpuGrads = learnerRun('cpu');
print({ check: 'ort learner cpu (1 thread), one chess group', seconds: cpuGrads.time });
try {
  const gpuGrads = learnerRun('webgpu');
  // Relative to each variable's largest gradient, as tests/models/onnx-learner.test.ts compares.
  const rel = Math.max(
    ...cpuGrads.grads.map(
      (g, i) =>
        maxDiff(g, gpuGrads.grads[i]) /
        Math.max(
          1e-12,
          g.reduce((m, x) => Math.max(m, Math.abs(x)), 0),
        ),
    ),
  );
  print({ check: 'ort learner webgpu vs cpu', gradMaxRelDiff: rel, seconds: gpuGrads.time });
} catch (e) {
  print({ check: 'ort learner webgpu vs cpu', error: String((e as Error).message ?? e) });
}

// tfjs (WASM): the learner's forward that the tfjs engine differentiates, against ORT's CPU log-probs. tfjs's WebGPU
// backend is not run: it cannot read results synchronously in Node (models/backend.ts), as this script found on an H200.
const t0 = performance.now();
const wasm = flat(policy.tokenLogProbs(cpu.scored, { useLora: true, temperature: 1 }));
print({
  check: 'tfjs wasm vs ort cpu',
  backend: tf.getBackend(),
  logProbMaxAbsDiff: maxDiff(cpu.lp, wasm),
  scoreSeconds: seconds(t0),
});
