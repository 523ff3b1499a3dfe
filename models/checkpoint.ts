// Checkpoints of the built-in policy, in layouts other tools read.
//   Base model dir:  config.json (format, version, architecture) + model.safetensors + tokenizer.json
//   LoRA adapter dir (PEFT): adapter_config.json + adapter_model.safetensors with tensors named
//     base_model.model.<module>.lora_A.weight [r, in] and ….lora_B.weight [out, r]
// Every file is written atomically. Loading checks everything against the architecture and fails with one line
// (UserError) naming the missing file, the unexpected tensor or the mismatched shape.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { UserError, describeZodError } from '../core/errors.ts';
import { writeFileAtomic, writeJsonAtomic } from '../core/files.ts';
import { Rng } from '../core/rng.ts';
import { ArchitectureSchema, CHECKPOINT_FORMAT_VERSION, LoraConfigSchema, MODEL_KIND, type LoraConfig } from './config.ts';
import { BuiltinPolicy } from './policy.ts';
import { CharTokenizer } from './tokenizer.ts';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from './safetensors.ts';
import { weightEntries } from './weights.ts';
import { loraAdapters } from './lora.ts';

export const BASE_FILES = ['config.json', 'model.safetensors', 'tokenizer.json'] as const;
export const ADAPTER_FILES = ['adapter_config.json', 'adapter_model.safetensors'] as const;
const ADAPTER_PREFIX = 'base_model.model.';

const BaseConfigSchema = z
  .object({
    format: z.literal(MODEL_KIND),
    formatVersion: z.literal(CHECKPOINT_FORMAT_VERSION),
    architecture: z.record(z.string(), z.unknown()),
  })
  .loose();

const AdapterConfigSchema = z
  .object({
    peft_type: z.literal('LORA'),
    task_type: z.string().optional(),
    r: z.number().int().positive(),
    lora_alpha: z.number().positive(),
    target_modules: z.array(z.string()).min(1),
    base_model_name_or_path: z.string().nullish(),
  })
  .loose();

function requireFiles(dir: string, files: readonly string[], what: string): void {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UserError(`${dir}: no such ${what} folder`);
  const missing = files.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) throw new UserError(`${dir}: incomplete ${what} (missing ${missing.join(', ')})`);
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new UserError(`${path}: not valid JSON`);
  }
}

function toDisk(variable: tf.Variable, transpose: boolean): NamedTensor {
  const t = transpose ? tf.tidy(() => tf.transpose(variable)) : variable;
  const data = t.dataSync() as Float32Array;
  const shape = t.shape.slice();
  if (transpose) t.dispose();
  return { shape, data: Float32Array.from(data) };
}

function fromDisk(tensor: NamedTensor, transpose: boolean): tf.Tensor {
  return tf.tidy(() => {
    const t = tf.tensor(tensor.data, tensor.shape);
    return transpose ? tf.transpose(t) : t;
  });
}

function sameShape(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Write a base checkpoint. `extra` goes into config.json (e.g. how it was trained). */
export function saveBaseCheckpoint(policy: BuiltinPolicy, dir: string, extra: Record<string, unknown> = {}): void {
  const tensors = new Map<string, NamedTensor>();
  for (const e of weightEntries(policy.weights)) tensors.set(e.name, toDisk(e.variable, e.transposeOnDisk));
  writeFileAtomic(join(dir, 'model.safetensors'), encodeSafetensors(tensors, { format: 'pt' }));
  writeJsonAtomic(join(dir, 'tokenizer.json'), policy.tokenizer.toJson());
  // config.json last: its presence marks a complete checkpoint.
  writeJsonAtomic(join(dir, 'config.json'), {
    format: MODEL_KIND,
    formatVersion: CHECKPOINT_FORMAT_VERSION,
    architecture: policy.arch,
    parameters: policy.parameterCount,
    ...extra,
  });
}

/** Load a base checkpoint into a new policy (no adapters attached). */
export function loadBaseCheckpoint(dir: string): BuiltinPolicy {
  requireFiles(dir, BASE_FILES, 'checkpoint');
  const configPath = join(dir, 'config.json');
  const config = BaseConfigSchema.safeParse(readJson(configPath));
  if (!config.success) throw new UserError(describeZodError(config.error, `${configPath}: `));
  const arch = ArchitectureSchema.safeParse(config.data.architecture);
  if (!arch.success) throw new UserError(describeZodError(arch.error, `${configPath}: architecture.`));
  const tokenizer = CharTokenizer.fromJson(readJson(join(dir, 'tokenizer.json')), join(dir, 'tokenizer.json'));
  const file = decodeSafetensors(readFileSync(join(dir, 'model.safetensors')), join(dir, 'model.safetensors'));
  const policy = BuiltinPolicy.create({ architecture: arch.data, tokenizer });
  const entries = weightEntries(policy.weights);
  try {
    for (const e of entries) {
      const t = file.tensors.get(e.name);
      if (!t) throw new UserError(`${dir}: model.safetensors lacks tensor ${e.name} (another architecture?)`);
      const expected = e.transposeOnDisk ? [...e.variable.shape].reverse() : e.variable.shape;
      if (!sameShape(t.shape, expected)) {
        throw new UserError(`${dir}: tensor ${e.name} has shape [${t.shape}] but config.json's architecture needs [${expected}]`);
      }
      const value = fromDisk(t, e.transposeOnDisk);
      e.variable.assign(value);
      value.dispose();
    }
    const known = new Set(entries.map((e) => e.name));
    const extra = [...file.tensors.keys()].filter((n) => !known.has(n));
    if (extra.length > 0) throw new UserError(`${dir}: model.safetensors has tensors this architecture does not use (${extra.slice(0, 3).join(', ')}…)`);
  } catch (error) {
    policy.dispose();
    throw error;
  }
  return policy;
}

/** Write the policy's LoRA adapters in PEFT layout. */
export function saveAdapter(policy: BuiltinPolicy, dir: string, options: { baseModel?: string } = {}): void {
  if (!policy.lora) throw new Error('saveAdapter: the policy has no LoRA adapters');
  const tensors = new Map<string, NamedTensor>();
  for (const a of loraAdapters(policy.lora)) {
    tensors.set(`${ADAPTER_PREFIX}${a.module}.lora_A.weight`, toDisk(a.a, true));
    tensors.set(`${ADAPTER_PREFIX}${a.module}.lora_B.weight`, toDisk(a.b, true));
  }
  writeFileAtomic(join(dir, 'adapter_model.safetensors'), encodeSafetensors(tensors, { format: 'pt' }));
  const c = policy.lora.config;
  writeJsonAtomic(join(dir, 'adapter_config.json'), {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    r: c.r,
    lora_alpha: c.alpha,
    lora_dropout: 0,
    target_modules: c.targetModules,
    base_model_name_or_path: options.baseModel ?? null,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    modules_to_save: null,
    revision: null,
  });
}

/** Attach the adapters stored in a PEFT folder to the policy (replacing any present). */
export function loadAdapter(policy: BuiltinPolicy, dir: string): LoraConfig {
  requireFiles(dir, ADAPTER_FILES, 'adapter');
  const configPath = join(dir, 'adapter_config.json');
  const parsed = AdapterConfigSchema.safeParse(readJson(configPath));
  if (!parsed.success) throw new UserError(describeZodError(parsed.error, `${configPath}: `));
  const config = LoraConfigSchema.safeParse({ r: parsed.data.r, alpha: parsed.data.lora_alpha, targetModules: parsed.data.target_modules });
  if (!config.success) throw new UserError(describeZodError(config.error, `${configPath}: `));
  const file = decodeSafetensors(readFileSync(join(dir, 'adapter_model.safetensors')), join(dir, 'adapter_model.safetensors'));
  const lora = policy.attachLora(config.data, new Rng(0, 'lora-load'));
  for (const a of loraAdapters(lora)) {
    for (const [suffix, variable] of [['lora_A', a.a], ['lora_B', a.b]] as const) {
      const name = `${ADAPTER_PREFIX}${a.module}.${suffix}.weight`;
      const t = file.tensors.get(name);
      if (!t) {
        policy.detachLora();
        throw new UserError(`${dir}: adapter_model.safetensors lacks ${name} (adapter for another architecture?)`);
      }
      const expected = [...variable.shape].reverse();
      if (!sameShape(t.shape, expected)) {
        policy.detachLora();
        throw new UserError(`${dir}: ${name} has shape [${t.shape}] but this model needs [${expected}] (adapter for another architecture?)`);
      }
      const value = fromDisk(t, true);
      variable.assign(value);
      value.dispose();
    }
  }
  return config.data;
}
