// The model registry: which architecture a checkpoint folder holds, and the loader that reads it, as
// envs/registry.ts does for environments. A folder is recognised by its config.json:
//   the built-in model   `format: "metrl-vlm"` (models/builtin/base-checkpoint.ts writes it)
//   Hugging Face         `model_type` (llama, qwen2, qwen3, idefics3, gemma3, …), as save_pretrained writes it
// The Hugging Face architectures are one table: each models/<arch>/architecture.ts exports its descriptor (model_type
// values and classes, decoder family, tensor layouts, image side, engines: models/hf/architecture.ts), and
// HF_ARCHITECTURES collects them; the config reader, the decoder loader, HfPolicy and models/engine.ts read it. Adding
// an architecture means one folder under models/ and one line here. Descriptors hold no model code (their image sides
// import it on demand), so a command that never loads a model never imports tfjs.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { UserError } from '../core/errors.ts';
import { MODEL_KIND } from './builtin/config.ts';
import { ArchitectureTable } from './hf/architecture.ts';
import type { HfPolicy } from './hf/policy.ts';
import type { LoadOptions, Policy } from './policy.ts';
import { readJson } from '../core/files.ts';
import { gemma3Architecture } from './gemma3/architecture.ts';
import { idefics3Architecture } from './idefics3/architecture.ts';
import { llamaArchitecture } from './llama/architecture.ts';
import { qwen2Architecture } from './qwen2/architecture.ts';
import { qwen25VlArchitecture } from './qwen2_5_vl/architecture.ts';
import { qwen3Architecture } from './qwen3/architecture.ts';
import { qwen3VlArchitecture } from './qwen3_vl/architecture.ts';

/** The Hugging Face architectures metrl runs, in the order messages list them. */
export const HF_ARCHITECTURES = new ArchitectureTable([
  llamaArchitecture, // LlamaForCausalLM
  qwen2Architecture, // Qwen2ForCausalLM
  qwen3Architecture, // Qwen3ForCausalLM
  gemma3Architecture, // Gemma3ForCausalLM, Gemma3ForConditionalGeneration
  idefics3Architecture, // Idefics3ForConditionalGeneration: SmolVLM
  qwen25VlArchitecture, // Qwen2_5_VLForConditionalGeneration
  qwen3VlArchitecture, // Qwen3VLForConditionalGeneration
]);

/** Reads a base checkpoint folder into a policy without adapters (UserError when it is incomplete or malformed). */
type PolicyLoader = (dir: string, options?: LoadOptions) => Promise<Policy>;

/** A Hugging Face checkpoint folder as an HfPolicy (the loader of every model_type in HF_ARCHITECTURES). */
export async function loadHfPolicy(dir: string, options: LoadOptions = {}): Promise<HfPolicy> {
  return (await import('./hf/policy.ts')).HfPolicy.load(dir, HF_ARCHITECTURES, options);
}

/** model_type → loader. The built-in model's model_type is its config.json `format`. */
const ARCHITECTURES: Record<string, PolicyLoader> = {
  [MODEL_KIND]: async (dir) => (await import('./builtin/base-checkpoint.ts')).loadBaseCheckpoint(dir),
  ...Object.fromEntries(HF_ARCHITECTURES.modelTypes().map((t) => [t, loadHfPolicy])),
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
