// The model registry: which architecture a checkpoint folder holds, and the loader that reads it, as
// envs/registry.ts does for environments. A folder is recognised by its config.json:
//   the built-in model   `format: "metrl-vlm"` (models/builtin/base-checkpoint.ts writes it)
//   Hugging Face         `model_type` (llama, qwen2, idefics3, gemma3, …), as save_pretrained writes it
// Adding an architecture means one folder under models/ and one line in ARCHITECTURES. Loaders are imported on
// demand, so a command that never loads a model never imports tfjs.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { UserError } from '../core/errors.ts';
import { MODEL_KIND } from './builtin/config.ts';
import type { Policy } from './policy.ts';
import { readJson } from '../core/files.ts';

/** How a loader places the weights. */
export interface LoadOptions {
  /**
   * The policy will run on ONNX Runtime (--engine ort): a Hugging Face checkpoint's weights are held in host memory
   * (tfjs's CPU backend, plain arrays the ORT graphs are built from) rather than in the WASM heap, which caps at 4 GB.
   */
  hostWeights?: boolean;
}

/** Reads a base checkpoint folder into a policy without adapters (UserError when it is incomplete or malformed). */
export type PolicyLoader = (dir: string, options?: LoadOptions) => Promise<Policy>;

async function hfPolicy(dir: string, options: LoadOptions = {}): Promise<Policy> {
  return (await import('./hf/policy.ts')).HfPolicy.load(dir, options);
}

/** model_type → loader. The built-in model's model_type is its config.json `format`. */
const ARCHITECTURES: Record<string, PolicyLoader> = {
  [MODEL_KIND]: async (dir) => (await import('./builtin/base-checkpoint.ts')).loadBaseCheckpoint(dir),
  // Hugging Face checkpoints (save_pretrained folders): one shared decoder, the VLMs add their vision tower.
  llama: hfPolicy, // LlamaForCausalLM (models/llama/)
  qwen2: hfPolicy, // Qwen2ForCausalLM (models/qwen2/)
  gemma3_text: hfPolicy, // Gemma3ForCausalLM (models/gemma3/)
  gemma3: hfPolicy, // Gemma3ForConditionalGeneration (models/gemma3/)
  idefics3: hfPolicy, // Idefics3ForConditionalGeneration: SmolVLM (models/idefics3/)
};

/** The built-in model's model_type (its config.json `format`). */
export const BUILTIN_MODEL_TYPE = MODEL_KIND;

export const supportedModelTypes = (): string[] => Object.keys(ARCHITECTURES);

/** What config.json says about the architecture; everything else in it is the loader's business. */
const ConfigMarkerSchema = z
  .object({
    format: z.string().optional(),
    model_type: z.string().optional(),
    architectures: z.array(z.string()).optional(),
  })
  .loose();

/** The model_type of the checkpoint in `dir`, read from its config.json. */
export function modelTypeOf(dir: string): string {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UserError(`${dir}: no such checkpoint folder`);
  const path = join(dir, 'config.json');
  if (!existsSync(path)) throw new UserError(`${dir}: incomplete checkpoint (missing config.json)`);
  const {
    format,
    model_type: modelType,
    architectures,
  } = readJson(path, ConfigMarkerSchema, {
    invalid: 'not a model config (format, model_type or architectures has the wrong type)',
  });
  if (modelType) return modelType;
  if (format === MODEL_KIND) return MODEL_KIND;
  const hint = architectures?.length ? ` (architectures: ${architectures.join(', ')})` : '';
  throw new UserError(`${path}: names no model_type${hint} and is not a built-in checkpoint (format "${MODEL_KIND}")`);
}

/** Load the base model in `dir` with the loader its model_type names. */
export async function loadBaseModel(dir: string, options: LoadOptions = {}): Promise<Policy> {
  const modelType = modelTypeOf(dir);
  const loader = ARCHITECTURES[modelType];
  if (!loader)
    throw new UserError(
      `${dir}: unsupported architecture ${modelType} (supported: ${supportedModelTypes().join(', ')})`,
    );
  return loader(dir, options);
}
