// metrl's side of one GRPO step on a SmolVLM-256M-shaped image prompt (peer of bench/peers/vlm_grpo_step.py), phase by
// phase: bench/peers/hf-step.mts with the prompt holding one image. The checkpoint is vlm_make_checkpoint.py's
// (Idefics3ForConditionalGeneration); the prompt is metrl's own (--write-prompt), read by both sides.
//   --write-prompt  once per checkpoint: the zero-shot prompt of a 1-action chess image episode (seed 0, the one
//              bench/hf.bench.ts uses) through HfPolicy.prompt: the checkpoint's chat template, the Idefics3 image
//              placeholders (64 image tokens), the real tokenizer, the board rendered and preprocessed by metrl's
//              Idefics3 processor (512 x 512, no splitting). Writes CKPT/vlm-prompt.json (token ids, image shape) and
//              CKPT/pixel_values.f32 ([1, 3, 512, 512] float32, the vision tower's input), which vlm_grpo_step.py
//              reads too: both sides see the same ids and pixel values.
//   rollout    the vision tower + connector on the image (once: the step's prompt holds a fresh copy of the pixel
//              array, as every train() step has new images, so HfPolicy's feature cache does not carry it over from the
//              previous step; reference and update reuse the features within the step, as train() does), then the
//              prompt prefilled once, its cache repeated for G = 8 rows, cached decoding at temperature 1 (top-p 1),
//              every completion forced to N tokens (the tokenizer's EOS ids emptied; checked). The tower's share is
//              reported as `vision` (within rollout). tfjs engine: the policy (tower on tfjs); ort: HfOrtSampler (the
//              tower and the decoder on ONNX Runtime).
//   reference  tokenLogProbs with LoRA off, no gradient (the policy's packed row on tfjs; the ORT sampler's prefill +
//              batched completions on ort), the prompt's image rows merged from the step's features;
//   update     as trainer/grpo/loop.ts updatePolicy with μ = 1 (hf-step.mts): summedLossGradients over the engine's learner,
//              grpoLoss (ε 0.2, β 0.04, k3), global-norm clip 1, AdamW (2e-4, 0.9 / 0.999, 1e-8), syncLora (ort).
// LoRA r 16 / alpha 32 on the language model's q, k, v, o, gate, up, down (metrl's default targets; the tower and the
// connector are frozen). --threads sets ONNX Runtime's threads (ort only; tfjs WASM runs one). Run from the checkout:
//   node_modules/.bin/tsx bench/peers/vlm-step.mts CKPT --write-prompt
//   node_modules/.bin/tsx bench/peers/vlm-step.mts CKPT [--engine tfjs|ort] [--threads N] [--lengths 64,128]
//     [--steps 1] [--warmup 1]
// Prints one JSON line per length, the schema of hf-step.mts (so ../shared/peers/hf/summarize.py tabulates it) plus
// `vision` and `cpu.vision` per step and `imageTokens`.
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { imp, tf } from './checkout.mts';
import { cpuNow, median, peerStep } from './peer-step.mts';
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
const PROMPT_FILE = 'vlm-prompt.json';
const PIXEL_FILE = 'pixel_values.f32';

const backend = await initBackend(process.env.METRL_BACKEND ?? 'wasm', null);
if (tf.getBackend() !== backend.tfBackend)
  throw new Error(`two tfjs instances: ${tf.getBackend()} vs ${backend.tfBackend}`);

if (argv.includes('--write-prompt')) {
  const { getEnv } = await imp('envs/registry.ts');
  const { generateEpisodes } = await imp('envs/generate.ts');
  const policy = await loadBaseModel(ckpt);
  const env = await getEnv('chess');
  const [episode] = generateEpisodes(env, { n: 1, actions: 1, split: 'train', seed: 0, modality: 'image' });
  const prompt = policy.prompt(env, episode) as { tokens: number[]; images: Float32Array[] };
  if (prompt.images.length !== 1) throw new Error(`expected one image, got ${prompt.images.length}`);
  const side = policy.imageSize;
  const image = prompt.images[0];
  if (image.length !== 3 * side * side) throw new Error(`pixel values: ${image.length} for 3 x ${side} x ${side}`);
  writeFileSync(join(ckpt, PIXEL_FILE), new Uint8Array(image.buffer, image.byteOffset, image.byteLength));
  const imageTokenId = (JSON.parse(readFileSync(join(ckpt, 'config.json'), 'utf8')) as { image_token_id: number })
    .image_token_id;
  const imageTokens = prompt.tokens.filter((t) => t === imageTokenId).length;
  writeFileSync(
    join(ckpt, PROMPT_FILE),
    JSON.stringify({
      tokens: prompt.tokens,
      imageShape: [1, 3, side, side],
      pixelValues: PIXEL_FILE,
      imageTokenId,
      imageTokens,
      source:
        'metrl HfPolicy.prompt: chess, 1-action image episode, train split, seed 0 (zero-shot); pixel values = the Idefics3 processor output, float32 little-endian',
    }),
  );
  console.log(
    JSON.stringify({
      prompt: join(ckpt, PROMPT_FILE),
      tokens: prompt.tokens.length,
      imageTokens,
      imageShape: [1, 3, side, side],
    }),
  );
  policy.dispose();
  process.exit(0);
}

const spec = JSON.parse(readFileSync(join(ckpt, PROMPT_FILE), 'utf8')) as { tokens: number[]; imageTokens: number };
const pixelBytes = readFileSync(join(ckpt, PIXEL_FILE));
const pixels = new Float32Array(
  pixelBytes.buffer.slice(pixelBytes.byteOffset, pixelBytes.byteOffset + pixelBytes.byteLength),
);

const t0 = performance.now();
const policy = await loadBaseModel(ckpt, { hostWeights: engine === 'ort' });
const loadSeconds = (performance.now() - t0) / 1000;
(policy.kit.tokenizer as { eosIds: number[] }).eosIds = []; // forced lengths: no row can stop
policy.attachLora({ r: 16, alpha: 32 }, new Rng(0, 'hf-peer-lora'));
const vars = policy.trainableVariables('lora');
const optimizer = new AdamW(vars, { learningRate: 2e-4, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 });
const ortSampler = engine === 'ort' ? new HfOrtSampler(policy, { threads }) : null;
// As metrl train does (models/engine.ts openEngine): the host's projections (decoder and vision tower) go once ORT
// maps them.
ortSampler?.releaseHostWeights();
const sampler = ortSampler ?? policy;
const learner = engine === 'ort' ? new HfOrtLearner(policy, { threads }) : policy;
const rng = new Rng(1, 'hf-peer-sampling');

// The vision tower's share of the rollout: every encode of an image (HfPolicy.imageFeatures → ImageEncoder.encode; the
// ORT sampler installs its tower inside the encoder, so this counts it too).
const encoder = (policy.imageEncoder ?? policy.image?.images) as { encode: (...a: unknown[]) => unknown };
const vision = { wall: 0, cpu: 0, calls: 0 };
const encode = encoder.encode.bind(encoder);
encoder.encode = (...a: unknown[]) => {
  const w = performance.now();
  const c = cpuNow();
  try {
    return encode(...a);
  } finally {
    vision.wall += (performance.now() - w) / 1000;
    vision.cpu += cpuNow() - c;
    vision.calls++;
  }
};

const setup = { sampler, learner, optimizer, vars, syncLora: engine === 'ort', group: G, rng };
function step(n: number) {
  // A fresh pixel array: HfPolicy caches image features per array, and every train() step has new images.
  const prompt = { tokens: spec.tokens, images: [pixels.slice()] };
  Object.assign(vision, { wall: 0, cpu: 0, calls: 0 });
  const timed = peerStep(setup, prompt, n); // the rollout includes the vision tower + connector
  if (vision.calls !== 1) throw new Error(`the vision tower ran ${vision.calls} times in the step, expected once`);
  return { ...timed, vision: vision.wall, cpu: { ...timed.cpu, vision: vision.cpu } };
}

for (const n of lengths) {
  for (let i = 0; i < warmup; i++) step(Math.min(n, 8));
  const done = Array.from({ length: steps }, () => step(n));
  const med = Object.fromEntries(
    (['rollout', 'reference', 'update', 'total', 'vision'] as const).map((k) => [k, median(done.map((s) => s[k]))]),
  );
  const Pn = spec.tokens.length;
  console.log(
    JSON.stringify({
      side: 'metrl',
      engine,
      threads: engine === 'ort' ? threads : 1,
      completionTokens: n,
      promptTokens: Pn,
      imageTokens: spec.imageTokens,
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
      peakRssMB: (process.resourceUsage().maxRSS * 1024) / 2 ** 20,
      loadavg: loadavg().map((x) => x.toFixed(2)),
      backend: backend.name,
      note:
        engine === 'ort'
          ? 'vision tower, rollout, reference and LoRA gradients on ONNX Runtime (AdamW on tfjs)'
          : 'all phases on tfjs WASM (1 thread)',
    }),
  );
}
sampler !== policy && (sampler as { dispose(): void }).dispose();
learner !== policy && (learner as { dispose(): void }).dispose();
policy.dispose();
