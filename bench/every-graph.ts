// Opens every graph metrl builds on one device, through the classes that build and open them in a run, and runs each
// once on tiny inputs: per Hugging Face fixture (Llama, its bfloat16 copy, Qwen2, Qwen3, Gemma 3, Idefics3, a
// soft-capped Gemma 3 CausalLM, Qwen2.5-VL, Qwen3-VL) the sampler's decoder graph, the device-copy graphs (upload and
// row gather, on WebGPU), the vision tower of the VLMs (SigLIP, Qwen-VL's) and the learner's training graph; for the
// built-in model (the shipped base) the sampler's general and decode graphs and the learner's scoring and training
// graphs. Run under METRL_ORT_PLACEMENT (session.ts) it is what the placement check reads
// (models/onnx/session-placement.ts; tests/models/webgpu-placement.test.ts, `npm run bench -- placement`). Prints one
// line per model to stdout.
//   node bin/run-ts.js bench/every-graph.ts [cpu|webgpu|cuda] [NAME,…] [--stored float32|bfloat16|float16]
// NAME: fixtures (llama, llama-bf16, qwen2, qwen3, gemma3, idefics3, qwen2_5_vl, qwen3_vl, gemma3-softcap) or builtin;
// default all. --stored forces the Hugging Face projections' stored type (tests open a GPU's 16-bit graphs on the CPU
// provider with it).
import * as tf from '@tensorflow/tfjs';
import { join } from 'node:path';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { Rng } from '../core/rng.ts';
import { initBackend } from '../models/backend.ts';
import { loadBaseCheckpoint } from '../models/builtin/base-checkpoint.ts';
import { checkDevice, DEVICES, type Device } from '../models/onnx/device.ts';
import { HfOrtLearner } from '../models/onnx/hf/hf-learner.ts';
import { HfOrtSampler } from '../models/onnx/hf/hf-sampler.ts';
import { BuiltinOrtLearner } from '../models/onnx/builtin/builtin-learner.ts';
import { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import type { WeightDtype } from '../models/onnx/weight-encoding.ts';
import type { EncodedPrompt, SequenceBatchItem } from '../models/types.ts';
import { fixtureCopy, GEMMA3_SOFTCAP } from './hf-fixtures.ts';
import { loadHfPolicy } from '../models/registry.ts';

const HF_MODELS = [
  'llama',
  'llama-bf16',
  'qwen2',
  'qwen3',
  'gemma3',
  'idefics3',
  'qwen2_5_vl',
  'qwen3_vl',
  GEMMA3_SOFTCAP,
];
const BUILTIN = 'builtin';

const args = process.argv.slice(2);
const storedAt = args.indexOf('--stored');
const stored = storedAt >= 0 ? (args.splice(storedAt, 2)[1] as WeightDtype) : undefined;
const device = (args[0] ?? 'webgpu') as Device;
if (!DEVICES.includes(device)) throw new Error(`every-graph: unknown device ${device}`);
const names = args[1] ? args[1].split(',') : [...HF_MODELS, BUILTIN];
await initBackend('wasm', null);
checkDevice(device);

const sumOf = (lp: { logProbs: tf.Tensor; mask: tf.Tensor }) =>
  tf.sum(tf.mul(lp.mask, tf.exp(lp.logProbs))) as tf.Scalar;

for (const name of names) {
  if (name === BUILTIN) {
    const policy = loadBaseCheckpoint(join(CHECKPOINTS_DIR, 'base'));
    policy.attachLora({ r: 4, alpha: 8 }, new Rng(0, 'lora'));
    // An image prompt: the general graph's patch inputs are fed.
    const image = { width: 32, height: 32, channels: 3 as const, data: new Uint8Array(32 * 32 * 3).fill(90) };
    const prompt = policy.encode([
      { type: 'text', text: 'Which square? ' },
      { type: 'image', image },
    ]);
    const sampler = new BuiltinOrtSampler(policy, { device, threads: 1 });
    const drawn = sampler.sampleGroups([prompt], 2, { maxNewTokens: 3, temperature: 1, topP: 1 }, new Rng(1, 'draw'));
    sampler.tokenLogProbs(
      drawn[0].map((c) => ({ prompt, completion: c.tokens })),
      { useLora: true },
    );
    sampler.dispose();
    const learner = new BuiltinOrtLearner(policy, { device, threads: 1 });
    const items = drawn[0].map((c) => ({ prompt, completion: c.tokens }));
    learner.lossGradients(items, { useLora: true, temperature: 1 }, sumOf, policy.trainableVariables('lora'));
    learner.dispose();
    console.log(`every-graph: ${name} on ${device}`);
    continue;
  }
  if (!HF_MODELS.includes(name)) throw new Error(`every-graph: unknown model ${name}`);
  const policy = await loadHfPolicy(fixtureCopy(name), { hostWeights: true });
  policy.attachLora({ r: 4, alpha: 8 }, new Rng(5, 'lora'));
  const prompt = { tokens: [5, 17, 33, 60, 91, 12], images: [] } as unknown as EncodedPrompt;
  const sampler = new HfOrtSampler(policy, { device, threads: 1, stored });
  // Prefill, the cache repeated for two rows (the gather graph), two decode steps.
  sampler.sampleGroups([prompt], 2, { maxNewTokens: 3, temperature: 1, topP: 1 }, new Rng(3, 'draw'));
  // The VLMs' SigLIP tower (opened here as a run opens it once the sampler exists).
  if (policy.image) sampler.releaseHostWeights();
  const items: SequenceBatchItem[] = [
    { prompt, completion: [4, 7, 2] },
    { prompt, completion: [8, 1] },
  ];
  const learner = new HfOrtLearner(policy, { device, threads: 1, stored });
  learner.lossGradientsSum(
    [{ batch: items, options: { useLora: true, temperature: 0.9 }, loss: sumOf }],
    policy.decoder.loraVariables(),
  );
  learner.dispose();
  sampler.dispose();
  console.log(`every-graph: ${name} on ${device}${stored ? ` (stored ${stored})` : ''}`);
}
