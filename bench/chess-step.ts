// The default chess image GRPO step that the ONNX Runtime benches (onnx.bench.ts, onnx-learner.bench.ts) measure,
// set up once for both: the shipped base (checkpoints/base) with fresh LoRA adapters (r 16, alpha 32, B perturbed so
// they do something), the first step's 4 prompts in the trainer's data order, and a tokenizer view whose EOS is never
// drawn, so that completions run to the forced length as ../shared/peers/torch-grpo-step.sh forces them. Also the
// median and load-average helpers both print their figures with.
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../models/backend.ts';
import { loadBaseCheckpoint } from '../models/builtin/base-checkpoint.ts';
import { loraAdapters } from '../models/builtin/lora.ts';
import type { BuiltinPolicy } from '../models/builtin/policy.ts';
import type { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import type { EncodedPrompt } from '../models/types.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { getEnv } from '../envs/registry.ts';
import { generateEpisodes } from '../envs/generate.ts';
import { DataOrder } from '../trainer/data-order.ts';
import { Rng } from '../core/rng.ts';

/** Tokens every completion is forced to (the default config's maxCompletionTokens). */
export const COMPLETION_TOKENS = 376;
/** Completions per prompt (the default group size). */
export const GROUP = 8;

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
export const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

export interface ChessStep {
  /** The tfjs backend's name (METRL_BACKEND, or the default). */
  backendName: string;
  policy: BuiltinPolicy;
  prompts: EncodedPrompt[];
  /** The policy's tokenizer with EOS never matching a drawn token. */
  neverEos: BuiltinPolicy['tokenizer'];
}

/** The step's policy and prompts, or null when checkpoints/base is not there (the bench then reports itself skipped). */
export async function chessStep(): Promise<ChessStep | null> {
  const backend = await initBackend(process.env.METRL_BACKEND, null);
  const dir = join(CHECKPOINTS_DIR, 'base');
  if (!existsSync(join(dir, 'model.safetensors'))) return null;
  const policy = loadBaseCheckpoint(dir);
  policy.attachLora({ r: 16, alpha: 32 }, new Rng(0, 'lora-init'));
  for (const [i, a] of loraAdapters(policy.lora!).entries())
    a.b.assign(tf.randomUniform(a.b.shape, -0.05, 0.05, 'float32', i));
  const env = await getEnv('chess');
  const train = generateEpisodes(env, { n: 100, actions: 5, split: 'train', seed: 0, modality: 'image' });
  const prompts = new DataOrder(100, 0).take(4).map((i) => policy.prompt(env, train[i]));
  const neverEos = Object.create(policy.tokenizer, { eos: { value: -1 } });
  return { backendName: backend.name, policy, prompts, neverEos };
}

/** The sampler seen through the never-EOS tokenizer: its decode loop stops at the tokenizer's EOS, so it never stops. */
export function forcedLength(sampler: BuiltinOrtSampler, step: ChessStep): BuiltinOrtSampler {
  return Object.create(sampler, {
    policy: { value: Object.create(step.policy, { tokenizer: { value: step.neverEos } }) },
  }) as BuiltinOrtSampler;
}
