// Speed and memory of a Hugging Face VLM as a metrl Policy: a random-weight model with SmolVLM-256M-Instruct's
// real configuration (text: SmolLM2-135M shape; vision: SigLIP base patch 16 at 512 px; pixel shuffle 4 → 64 tokens per
// image) and its real tokenizer and chat template, written to a temp folder and loaded through models/registry.ts.
// Measured through the Policy only: load time and memory; prompt encoding; the vision tower on one 512 px image; the
// prefill of a one-image chess prompt; decoding at group 8; the learner's passes with LoRA r16 on one sequence of
// prompt + 64 completion tokens; and one GRPO step through trainer/grpo/loop.ts's train() on a chess image episode.
//
// The GRPO step runs one prompt of G = 8 (1-action episodes) by default; the default configuration's step (4 prompts ×
// 8, 5-action episodes) is then extrapolated from the measured rates, its arithmetic printed in the notes.
// METRL_BENCH_HF_FULL=1 runs that step for real instead (tens of minutes on two CPU cores; METRL_BENCH_HF_GROUP=N with
// it: groups of N); METRL_BENCH_HF_GRPO=0 skips it. The step's rows split its CPU seconds by phase and count the vision
// tower's calls against the distinct images of the step. METRL_BENCH_HF_ENGINE=ort runs the step on the ONNX Runtime
// engine (its LoRA gradients included) instead of tfjs.
// Every timed phase also notes the CPU seconds the process used: on a machine shared with other jobs wall time
// stretches with the load, CPU time much less (the WASM backend computes on one thread).
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { BenchRow } from './table.ts';
import { Rng } from '../core/rng.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { SHARED_DIR } from '../core/paths.ts';
import { getEnv } from '../envs/registry.ts';
import { generateEpisodes } from '../envs/generate.ts';
import { initBackend } from '../models/backend.ts';
import { HF_ARCHITECTURES, loadBaseModel } from '../models/registry.ts';
import { parseHfConfig } from '../models/hf/config.ts';
import { parseIdefics3VisionSetup } from '../models/idefics3/vision-config.ts';
import { writeHfCheckpoint } from '../models/hf/write-checkpoint.ts';
import { randomIdefics3Tensors } from '../models/idefics3/random-weights.ts';
import type { EncodedPrompt, SequenceBatchItem } from '../models/types.ts';
import { resolveConfig } from '../trainer/config.ts';
import { train } from '../trainer/grpo/loop.ts';
import type { Policy } from '../models/policy.ts';
import type { TrainRow } from '../trainer/logs/metrics.ts';

/**
 * SmolVLM-256M-Instruct's config.json (HuggingFaceTB/SmolVLM-256M-Instruct): the fields that shape the model and its
 * token ids. Vision fields left out are Idefics3VisionConfig's defaults (12 layers, intermediate 3072, gelu_pytorch_tanh).
 */
export const SMOLVLM_256M_CONFIG = {
  architectures: ['Idefics3ForConditionalGeneration'],
  model_type: 'idefics3',
  image_token_id: 49190,
  pad_token_id: 128002,
  scale_factor: 4,
  tie_word_embeddings: false,
  vocab_size: 49280,
  text_config: {
    architectures: ['VLlama3ForCausalLM'],
    model_type: 'llama',
    head_dim: 64,
    hidden_size: 576,
    initializer_range: 0.041666666666666664,
    intermediate_size: 1536,
    max_position_embeddings: 8192,
    num_attention_heads: 9,
    num_hidden_layers: 30,
    num_key_value_heads: 3,
    pad_token_id: 2,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    vocab_size: 49280,
  },
  vision_config: {
    model_type: 'idefics3_vision',
    hidden_size: 768,
    image_size: 512,
    num_attention_heads: 12,
    patch_size: 16,
  },
};

/** No splitting (metrl's Idefics3 processor does not split): one 512 px square per image, SmolVLM's other settings. */
const PREPROCESSOR = {
  do_image_splitting: false,
  do_resize: true,
  size: { longest_edge: 512 },
  max_image_size: { longest_edge: 512 },
  resample: 1,
  do_rescale: true,
  rescale_factor: 1 / 255,
  do_normalize: true,
  image_mean: [0.5, 0.5, 0.5],
  image_std: [0.5, 0.5, 0.5],
};

const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json'];
const GROUP = 8;
const DECODE_TOKENS = 24;
const COMPLETION_TOKENS = 64;
const GROUP_NAME = 'hf smolvlm-256m';

const seconds = (since: number) => (performance.now() - since) / 1000;
/** CPU seconds this process used since `since` (process.cpuUsage()): the WASM backend runs on one thread, so on a
 *  machine shared with other jobs this is close to what the phase takes on an idle core, while wall time is not. */
const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
};
const mb = (bytes: number) => bytes / 2 ** 20;
const progress = (what: string) =>
  process.stderr.write(`bench hf: ${what} (${new Date().toISOString().slice(11, 19)})\n`);
const peakRss = () => mb(process.resourceUsage().maxRSS * 1024);

/** The WASM backend's heap (it only grows, so this is its peak); null on other backends. */
function wasmHeapBytes(): number | null {
  const backend = tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } };
  return backend.wasm?.HEAPU8?.buffer.byteLength ?? null;
}

/** Write the random-weight SmolVLM-256M folder: config, weights, preprocessor config, the real tokenizer files. */
export function writeSmolvlmFolder(dir: string): { parameters: number } {
  const config = parseHfConfig(SMOLVLM_256M_CONFIG, HF_ARCHITECTURES);
  const setup = parseIdefics3VisionSetup(SMOLVLM_256M_CONFIG);
  const tensors = randomIdefics3Tensors(
    config,
    setup,
    new Rng(0, 'bench-hf-init'),
    SMOLVLM_256M_CONFIG.text_config.initializer_range,
  );
  let parameters = 0;
  for (const t of tensors.values()) parameters += t.data.length;
  mkdirSync(dir, { recursive: true });
  writeHfCheckpoint(dir, SMOLVLM_256M_CONFIG, tensors);
  writeJsonAtomic(join(dir, 'preprocessor_config.json'), PREPROCESSOR);
  const tokenizerDir = join(SHARED_DIR, 'fixtures', 'hf', 'tokenizer-smolvlm');
  for (const f of TOKENIZER_FILES) copyFileSync(join(tokenizerDir, f), join(dir, f));
  return { parameters };
}

/** The same prompt with its own copy of the pixels: HfPolicy caches image features by pixel array, so a copy misses. */
const freshPixels = (p: EncodedPrompt): EncodedPrompt => ({
  tokens: p.tokens,
  images: p.images.map((img) => img.slice()),
});

export async function run(): Promise<BenchRow[]> {
  const backend = await initBackend(process.env.METRL_BACKEND, null);
  const g = GROUP_NAME;
  const rows: BenchRow[] = [];
  const loadText = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  rows.push({
    group: g,
    name: 'load average at start (1/5/15 min)',
    value: loadavg()[0],
    unit: '',
    note: `${loadText}; tfjs ${backend.name}`,
  });
  // Not named metrl-*: a sweep of /tmp/metrl-* by a parallel job once removed the folder mid-run.
  const scratch = mkdtempSync(join(tmpdir(), 'bench-hf-smolvlm-'));
  try {
    const dir = join(scratch, 'smolvlm-256m');
    progress('writing the random-weight checkpoint');
    let t = performance.now();
    let c = process.cpuUsage();
    const { parameters } = writeSmolvlmFolder(dir);
    rows.push({
      group: g,
      name: 'write random checkpoint',
      value: seconds(t),
      unit: 's',
      note: `${(parameters / 1e6).toFixed(1)} M parameters, float32; cpu ${cpuSeconds(c).toFixed(1)} s`,
    });
    global.gc?.();

    // ---- load ------------------------------------------------------------------------------------------------
    progress('loading');
    const rssBefore = process.memoryUsage().rss;
    t = performance.now();
    c = process.cpuUsage();
    const policy = await loadBaseModel(dir);
    rows.push({
      group: g,
      name: 'load (loadBaseModel → HfPolicy)',
      value: seconds(t),
      unit: 's',
      note: `config, tokenizer, template, safetensors → tfjs; cpu ${cpuSeconds(c).toFixed(1)} s`,
    });
    rows.push({
      group: g,
      name: '  RSS after load',
      value: mb(process.memoryUsage().rss),
      unit: 'MB',
      note: `+${mb(process.memoryUsage().rss - rssBefore).toFixed(0)} MB over the process before loading`,
    });
    const heap = wasmHeapBytes();
    if (heap !== null)
      rows.push({
        group: g,
        name: '  WASM heap after load',
        value: mb(heap),
        unit: 'MB',
        note: `tfjs tensors ${mb(tf.memory().numBytes).toFixed(0)} MB`,
      });

    // ---- prompt ----------------------------------------------------------------------------------------------
    progress('prompt, vision tower, prefill');
    const env = await getEnv('chess');
    const [episode] = generateEpisodes(env, { n: 1, actions: 1, split: 'train', seed: 0, modality: 'image' });
    t = performance.now();
    c = process.cpuUsage();
    const prompt = policy.prompt(env, episode);
    const P = prompt.tokens.length;
    rows.push({
      group: g,
      name: 'prompt encode (1-image chess episode)',
      value: seconds(t),
      unit: 's',
      note: `${P} tokens (64 image tokens); render, template, tokenizer, 512 px Lanczos; cpu ${cpuSeconds(c).toFixed(2)} s`,
    });
    // The default configuration's 5-action episodes, for the GRPO step's extrapolation (token count only).
    const [episode5] = generateEpisodes(env, { n: 1, actions: 5, split: 'train', seed: 0, modality: 'image' });
    const P5 = policy.prompt(env, episode5).tokens.length;

    // ---- vision tower and prefill: sampleGroup with G = 1 and one new token is one prefill ----------------------
    const one = { temperature: 1, topP: 1, maxNewTokens: 1 };
    const rng = new Rng(1, 'bench-hf-sampling');
    t = performance.now();
    policy.sampleGroup(prompt, 1, one, rng); // first call: vision tower + prefill, cold
    const coldFull = seconds(t);
    t = performance.now();
    c = process.cpuUsage();
    policy.sampleGroup(prompt, 1, one, rng); // image features cached: prefill only
    const prefill = seconds(t);
    const prefillCpu = cpuSeconds(c);
    const fresh = freshPixels(prompt);
    t = performance.now();
    c = process.cpuUsage();
    policy.sampleGroup(fresh, 1, one, rng); // new pixel array: vision tower again, warm
    const vision = Math.max(0, seconds(t) - prefill);
    const visionCpu = Math.max(0, cpuSeconds(c) - prefillCpu);
    rows.push({
      group: g,
      name: 'vision tower + connector, one 512 px image',
      value: vision,
      unit: 's',
      note: `1024 patches × 12 layers → 64 tokens; cpu ${visionCpu.toFixed(1)} s; cold first call (vision + prefill) ${coldFull.toFixed(1)} s`,
    });
    rows.push({
      group: g,
      name: 'prefill tokens/s',
      value: P / prefill,
      unit: 'tok/s',
      note: `${P}-token prompt in ${prefill.toFixed(2)} s, cpu ${prefillCpu.toFixed(2)} s (image features cached)`,
    });
    rows.push({
      group: g,
      name: 'prompt → first token, image encoded',
      value: vision + prefill,
      unit: 's',
      note: 'vision tower + prefill',
    });

    progress('decoding at group 8');
    // ---- decode at group 8 -------------------------------------------------------------------------------------
    t = performance.now();
    c = process.cpuUsage();
    const completions = policy.sampleGroup(
      prompt,
      GROUP,
      { temperature: 1, topP: 1, maxNewTokens: DECODE_TOKENS },
      rng,
    );
    const groupSeconds = seconds(t);
    const decodeCpu = Math.max(0, cpuSeconds(c) - prefillCpu);
    const steps = Math.max(...completions.map((c) => c.tokens.length)) - 1; // the first token comes from the prefill
    const decodeSeconds = Math.max(1e-9, groupSeconds - prefill);
    rows.push({
      group: g,
      name: `decode tokens/s (G=${GROUP})`,
      value: (GROUP * steps) / decodeSeconds,
      unit: 'tok/s',
      note: `${steps} steps × ${GROUP} rows in ${decodeSeconds.toFixed(2)} s, cpu ${decodeCpu.toFixed(2)} s (sampleGroup ${groupSeconds.toFixed(2)} s less one prefill)`,
    });
    rows.push({
      group: g,
      name: '  seconds per decode step (8 rows)',
      value: decodeSeconds / steps,
      unit: 's',
      note: `cpu ${(decodeCpu / steps).toFixed(3)} s`,
    });

    // ---- learner: one sequence of prompt + 64 completion tokens ------------------------------------------------
    progress('learner passes');
    policy.attachLora({ r: 16, alpha: 32 }, new Rng(2, 'bench-hf-lora'));
    const sampled = completions[0].tokens; // random weights: no EOS, so DECODE_TOKENS of them
    const completion = Array.from({ length: COMPLETION_TOKENS }, (_, i) => sampled[i % sampled.length]);
    const items: SequenceBatchItem[] = [{ prompt, completion }];
    const tokens = P + COMPLETION_TOKENS;
    t = performance.now();
    c = process.cpuUsage();
    tf.tidy(() => {
      policy.tokenLogProbs(items, { useLora: false }).logProbs.dataSync();
    });
    const forward = seconds(t);
    rows.push({
      group: g,
      name: 'forward tokens/s (reference log-probs)',
      value: tokens / forward,
      unit: 'tok/s',
      note: `${P} + ${COMPLETION_TOKENS} tokens in ${forward.toFixed(2)} s, cpu ${cpuSeconds(c).toFixed(2)} s`,
    });
    const vars = policy.trainableVariables('lora');
    t = performance.now();
    c = process.cpuUsage();
    const { value, grads } = tf.variableGrads(() => {
      const r = policy.tokenLogProbs(items, { useLora: true });
      return tf.sum(tf.mul(r.logProbs, r.mask)) as tf.Scalar;
    }, vars);
    value.dataSync();
    const learn = seconds(t);
    const learnCpu = cpuSeconds(c);
    tf.dispose([value, ...Object.values(grads)]);
    rows.push({
      group: g,
      name: 'learner tokens/s (fwd+bwd, LoRA r16)',
      value: tokens / learn,
      unit: 'tok/s',
      note: `${P} + ${COMPLETION_TOKENS} tokens in ${learn.toFixed(2)} s, cpu ${learnCpu.toFixed(2)} s; ${vars.length} LoRA variables`,
    });
    rows.push({
      group: g,
      name: '  RSS peak so far',
      value: peakRss(),
      unit: 'MB',
      note: `WASM heap ${mb(wasmHeapBytes() ?? 0).toFixed(0)} MB`,
    });

    progress('one GRPO step (train())');
    // ---- one GRPO step (trainer/grpo/loop.ts train()) -------------------------------------------------------------
    // The same policy and its r16 adapters (the training defaults): a second 1 GB load next to this one's freed
    // heap did not fit in the WASM backend's 4 GB.
    if (process.env.METRL_BENCH_HF_GRPO === '0')
      rows.push({
        group: `grpo ${GROUP_NAME}`,
        name: 'one GRPO step',
        value: NaN,
        unit: '',
        note: 'skipped (METRL_BENCH_HF_GRPO=0)',
      });
    else
      try {
        rows.push(
          ...(await grpoStep(policy, dir, scratch, {
            vision,
            prefill,
            P,
            P5,
            decodePerStep: decodeSeconds / steps,
            forwardRate: tokens / forward,
            learnRate: tokens / learn,
          })),
        );
      } catch (error) {
        // The WASM backend reports a full heap as an exception ("memory access out of bounds", "Aborted()"): keep the
        // rows measured so far and say where the step stopped.
        const message = (error instanceof Error ? error.message : String(error)).split('\n')[0].slice(0, 100);
        rows.push({
          group: `grpo ${GROUP_NAME}`,
          name: 'one GRPO step',
          value: NaN,
          unit: '',
          note: `failed: ${message}`,
        });
      }
    rows.push({
      group: g,
      name: 'peak RSS (whole bench)',
      value: peakRss(),
      unit: 'MB',
      note: `WASM heap ${mb(wasmHeapBytes() ?? 0).toFixed(0)} MB`,
    });
    rows.push({
      group: g,
      name: 'load average at end (1/5/15 min)',
      value: loadavg()[0],
      unit: '',
      note: loadavg()
        .map((x) => x.toFixed(2))
        .join(' '),
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return rows;
}

interface Rates {
  vision: number;
  prefill: number;
  P: number;
  /** Prompt tokens of a 5-action chess image episode. */
  P5: number;
  decodePerStep: number;
  forwardRate: number;
  learnRate: number;
}

/**
 * One GRPO step of train() on chess image episodes from the random-weight folder. The step-0 evaluation (testSize 1) and
 * the checkpoint fall outside the step's own time (its metrics row). Small by default, then scaled to the default
 * configuration with the arithmetic in the notes.
 */
async function grpoStep(policy: Policy, dir: string, scratch: string, rates: Rates): Promise<BenchRow[]> {
  const full = process.env.METRL_BENCH_HF_FULL === '1';
  const defaults = resolveConfig({}, {});
  // METRL_BENCH_HF_GROUP=N: the default configuration with a smaller group (for a machine where G = 8 takes too long).
  const group = process.env.METRL_BENCH_HF_GROUP ? { groupSize: Number(process.env.METRL_BENCH_HF_GROUP) } : {};
  const small = full ? group : { promptsPerStep: 1, actions: 1 };
  const promptsPerStep = full ? defaults.promptsPerStep : 1;
  // stopAfterStep 1 of 2 steps: no evaluation after the step (only the unavoidable step-0 one).
  // METRL_BENCH_HF_ENGINE=ort|tfjs: the step on that engine (ort: rollouts, vision tower, reference and the LoRA gradients).
  const engine = { engine: process.env.METRL_BENCH_HF_ENGINE === 'ort' ? ('ort' as const) : ('tfjs' as const) };
  const config = resolveConfig(
    {},
    {
      ...small,
      ...engine,
      steps: 2,
      trainSize: promptsPerStep * defaults.gradientAccumulation,
      testSize: 1,
      evalEvery: 1000,
      checkpointEvery: 1000,
    },
  );
  // loadTrainingPolicy's setup, on the loaded policy: its LoRA adapters are the configuration's (r 16, alpha 32).
  if (config.loraRank !== 16 || config.loraAlpha !== 32)
    throw new Error('grpoStep: the default LoRA settings changed; attach them here');
  const setup = { policy, baseModel: dir };
  const env = await getEnv('chess');
  const stepRows: TrainRow[] = [];
  let budget = 0;
  let stepCpuFrom: NodeJS.CpuUsage | null = null;
  let stepCpu = NaN;
  // CPU seconds by phase, counted from the step's start (the step-0 evaluation resets them): the rollout (sampleGroups,
  // vision tower included), the vision tower alone with its calls and distinct images, the reference pass (LoRA off).
  const phase = { rollout: 0, vision: 0, visionCalls: 0, reference: 0, images: new Set<unknown>() };
  const timed =
    <A extends unknown[], R>(f: (...a: A) => R, add: (cpu: number, ...a: A) => void) =>
    (...a: A): R => {
      const c = process.cpuUsage();
      try {
        return f(...a);
      } finally {
        add(cpuSeconds(c), ...a);
      }
    };
  const p = policy as unknown as Policy & { image?: { images: { encode: (pixels: { data: unknown }) => unknown } } };
  const encode = p.image?.images.encode.bind(p.image.images);
  if (p.image && encode)
    p.image.images.encode = timed(
      encode,
      (cpu, pixels) => ((phase.vision += cpu), phase.visionCalls++, phase.images.add(pixels.data)),
    );
  p.sampleGroups = timed(p.sampleGroups.bind(p), (cpu) => (phase.rollout += cpu));
  p.tokenLogProbs = timed(p.tokenLogProbs.bind(p), (cpu, _batch, options) => {
    if (!options.useLora) phase.reference += cpu;
  });
  const t = performance.now();
  await train({
    env,
    ...setup,
    config,
    modality: 'image',
    runDir: join(scratch, 'grpo'),
    resume: false,
    stopAfterStep: 1,
    onEvent: (e) => {
      if (e.kind === 'start') budget = e.maxCompletionTokens;
      if (e.kind === 'eval') {
        stepCpuFrom = process.cpuUsage(); // the step-0 evaluation is over: the step starts
        Object.assign(phase, { rollout: 0, vision: 0, visionCalls: 0, reference: 0, images: new Set<unknown>() });
        progress('step-0 evaluation done; the GRPO step starts');
      }
      if (e.kind === 'step') {
        stepRows.push(e.row);
        if (stepCpuFrom) stepCpu = cpuSeconds(stepCpuFrom);
      }
    },
  });
  const wall = seconds(t);
  setup.policy.dispose();
  const r = stepRows[0];
  const g = `grpo ${GROUP_NAME}`;
  const sequences = config.promptsPerStep * config.gradientAccumulation * config.groupSize;
  const shape = `${config.promptsPerStep * config.gradientAccumulation}×${config.groupSize} completions, ${config.actions}-action chess image episodes, ≤${budget} new tokens`;
  const rest = stepCpu - phase.rollout - phase.reference;
  const rows: BenchRow[] = [
    {
      group: g,
      name: full ? 'seconds per step (measured, default config)' : 'seconds per step (measured)',
      value: r.time.total,
      unit: 's',
      note: `${shape}; cpu ${stepCpu.toFixed(1)} s; load ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')} at its end`,
    },
    {
      group: g,
      name: '  rollout (vision + prefill + decode)',
      value: r.time.rollout,
      unit: 's',
      note: `cpu ${phase.rollout.toFixed(1)} s`,
    },
    {
      group: g,
      name: '    of which vision tower',
      value: NaN,
      unit: '',
      note: `cpu ${phase.vision.toFixed(1)} s; ${phase.visionCalls} calls for ${phase.images.size} distinct images (each encoded once a step)`,
    },
    { group: g, name: '  reward', value: r.time.reward, unit: 's' },
    {
      group: g,
      name: '  log-probs (reference)',
      value: r.time.logprobs,
      unit: 's',
      note: `cpu ${phase.reference.toFixed(1)} s`,
    },
    {
      group: g,
      name: '  update (fwd + bwd + AdamW)',
      value: r.time.update,
      unit: 's',
      note: `cpu ${rest.toFixed(1)} s (step cpu less rollout and reference; reward included)`,
    },
    {
      group: g,
      name: '  rollout tokens/s',
      value: r.rolloutTokensPerSecond,
      unit: 'tok/s',
      note: `mean completion ${r.completionLength.toFixed(1)} tokens`,
    },
    {
      group: g,
      name: '  learner tokens/s',
      value: r.learnerTokensPerSecond,
      unit: 'tok/s',
      note: `prompt + completion tokens of ${sequences} sequences through the learner passes (a shared prompt counted per sequence)`,
    },
    {
      group: g,
      name: '  WASM heap after the step',
      value: mb(wasmHeapBytes() ?? 0),
      unit: 'MB',
      note: `peak RSS ${peakRss().toFixed(0)} MB`,
    },
    {
      group: g,
      name: '  train() wall time',
      value: wall,
      unit: 's',
      note: 'with prompt encoding, step-0 evaluation (testSize 1), checkpoint',
    },
  ];
  // The estimate below scales this bench's tfjs phase rates, which say nothing of the ONNX Runtime engine's.
  if (full || engine.engine) return rows;

  // The default configuration's step from the measured phases: vision per image, prefill and decode scaled by the
  // token counts; the learner passes scaled from this step's own learner rate. Assumes cost linear in tokens (attention
  // grows faster, batching of the rollout rows slower): an estimate, not a measurement.
  const promptTokens5 = rates.P5;
  const C = r.completionLength;
  const prompts = defaults.promptsPerStep * defaults.gradientAccumulation;
  const images = prompts * defaults.actions;
  const rolloutVision = images * rates.vision;
  const rolloutPrefill = prompts * (promptTokens5 / rates.P) * rates.prefill;
  const rolloutDecode = ((prompts * defaults.groupSize) / GROUP) * C * rates.decodePerStep;
  const seqTokensSmall = config.groupSize * (rates.P + C);
  const seqTokens = prompts * defaults.groupSize * (promptTokens5 + C);
  const logprobs = r.time.logprobs * (seqTokens / seqTokensSmall);
  const update = r.time.update * (seqTokens / seqTokensSmall);
  const total = rolloutVision + rolloutPrefill + rolloutDecode + r.time.reward + logprobs + update;
  rows.push(
    {
      group: g,
      name: 'seconds per step, default config (estimate)',
      value: total,
      unit: 's',
      note: `${prompts}×${defaults.groupSize} completions, ${defaults.actions}-action episodes (${promptTokens5}-token prompts), C = ${C.toFixed(0)}`,
    },
    {
      group: g,
      name: '  vision',
      value: rolloutVision,
      unit: 's',
      note: `${images} images × ${rates.vision.toFixed(2)} s`,
    },
    {
      group: g,
      name: '  prefill',
      value: rolloutPrefill,
      unit: 's',
      note: `${prompts} × ${promptTokens5} tokens at ${(rates.P / rates.prefill).toFixed(0)} tok/s`,
    },
    {
      group: g,
      name: '  decode',
      value: rolloutDecode,
      unit: 's',
      note: `${C.toFixed(0)} steps × ${(prompts * defaults.groupSize) / GROUP} groups of 8 × ${rates.decodePerStep.toFixed(2)} s`,
    },
    {
      group: g,
      name: '  log-probs (reference)',
      value: logprobs,
      unit: 's',
      note: `${r.time.logprobs.toFixed(1)} s × ${seqTokens.toFixed(0)} / ${seqTokensSmall.toFixed(0)} sequence tokens`,
    },
    {
      group: g,
      name: '  update',
      value: update,
      unit: 's',
      note: `${r.time.update.toFixed(1)} s × ${seqTokens.toFixed(0)} / ${seqTokensSmall.toFixed(0)} sequence tokens`,
    },
    {
      group: g,
      name: '  in CPU seconds (estimate)',
      value: total * (stepCpu / r.time.total),
      unit: 's',
      note: `× ${(stepCpu / r.time.total).toFixed(2)}, the measured step's cpu / wall: about an idle core's time`,
    },
  );
  return rows;
}
