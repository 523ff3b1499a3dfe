// PEFT LoRA adapters for the Hugging Face decoders: fresh adapters for training, and the PEFT 0.17
// on-disk format read and written (adapter_config.json + adapter_model.safetensors).
//
// On disk (PEFT): `base_model.model.<module path>.lora_A.weight` [r, in] and `….lora_B.weight` [out, r], module paths
// as transformers names the modules in memory (model.layers.0.self_attn.q_proj; model.text_model.… for Idefics3;
// model.language_model.… for Gemma 3, whose adapters from older transformers say language_model.model.…). Each target
// linear computes W x + (lora_alpha / r) · B (A x) (lora_alpha / sqrt(r) with use_rslora). In memory A and B are
// tfjs variables [in, r] and [r, out] (models/layers/linear.ts), so the files hold their transposes.
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { UserError } from '../../core/errors.ts';
import { writeFileAtomic } from '../../core/files.ts';
import type { Rng } from '../../core/rng.ts';
import { encodeSafetensors, type NamedTensor } from '../safetensors.ts';
import type { HfDecoder } from './decoder.ts';
import { readSafetensorsHeader, CheckpointTensors } from './weights.ts';
import type { LinearWeights } from '../layers/linear.ts';
import { readJson } from '../../core/files.ts';

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';
const KEY_PREFIX = 'base_model.model.';

/** The projections a LoRA adapter targets by default: every linear layer of the language model's blocks. */
export const DEFAULT_LORA_TARGETS = [
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'gate_proj',
  'up_proj',
  'down_proj',
] as const;

export interface LoraSettings {
  r: number;
  alpha: number;
  /** Projection names (q_proj … down_proj; the short forms q, k, v, o, gate, up, down are accepted). */
  targets?: readonly string[];
  useRslora?: boolean;
}

/** What adapter_config.json says (the fields metrl acts on) and the whole object, kept for writing back. */
export interface PeftAdapterConfig {
  r: number;
  alpha: number;
  useRslora: boolean;
  targetModules: string[] | string;
  baseModelNameOrPath: string | null;
}

const AdapterConfigSchema = z
  .object({
    peft_type: z.literal('LORA'),
    r: z.number().int().positive(),
    lora_alpha: z.number().positive(),
    target_modules: z
      .union([z.array(z.string()), z.string()])
      .nullable()
      .optional(),
    base_model_name_or_path: z.string().nullable().optional(),
    use_rslora: z.boolean().optional(),
    use_dora: z.boolean().optional(),
    bias: z.string().optional(),
    fan_in_fan_out: z.boolean().optional(),
    lora_bias: z.boolean().optional(),
    modules_to_save: z.array(z.string()).nullable().optional(),
    rank_pattern: z.record(z.string(), z.unknown()).optional(),
    alpha_pattern: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

function scaleOf(alpha: number, r: number, rslora: boolean): number {
  return rslora ? alpha / Math.sqrt(r) : alpha / r;
}

/** 'q' → 'q_proj'; full names pass through. */
function normaliseTarget(name: string): string {
  return /^(q|k|v|o|gate|up|down)$/.test(name) ? `${name}_proj` : name;
}

function targetLinears(decoder: HfDecoder, targets: readonly string[]): LinearWeights[] {
  const wanted = new Set(targets.map(normaliseTarget));
  for (const t of wanted) {
    if (!(DEFAULT_LORA_TARGETS as readonly string[]).includes(t))
      throw new UserError(`--lora-targets: unknown projection '${t}' (choose from ${DEFAULT_LORA_TARGETS.join(', ')})`);
  }
  return [...decoder.linears().values()].filter((l) => wanted.has(l.module.slice(l.module.lastIndexOf('.') + 1)));
}

/** Remove (and dispose) every attached adapter. */
export function detachLora(decoder: HfDecoder): void {
  for (const l of decoder.linears().values()) {
    l.lora?.a.dispose();
    l.lora?.b.dispose();
    l.lora = undefined;
  }
}

/**
 * Attach fresh adapters to the target projections (replacing any present): A ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's
 * kaiming_uniform(a=sqrt(5)) bound), B = 0, so the model's function is unchanged until B trains. Returns the variables.
 */
export function createLora(decoder: HfDecoder, settings: LoraSettings, rng: Rng): tf.Variable[] {
  detachLora(decoder);
  const scale = scaleOf(settings.alpha, settings.r, settings.useRslora ?? false);
  for (const l of targetLinears(decoder, settings.targets ?? DEFAULT_LORA_TARGETS)) {
    const [inDim, outDim] = l.w.shape as [number, number];
    const bound = 1 / Math.sqrt(inDim);
    const a = new Float32Array(inDim * settings.r);
    for (let i = 0; i < a.length; i++) a[i] = (rng.next() * 2 - 1) * bound;
    l.lora = {
      a: tf.variable(tf.tensor2d(a, [inDim, settings.r]), true),
      b: tf.variable(tf.zeros([settings.r, outDim]), true),
      scale,
    };
  }
  return decoder.loraVariables();
}

/** Parse adapter_config.json of an adapter folder. */
export function readPeftConfig(dir: string): PeftAdapterConfig {
  const path = join(dir, ADAPTER_CONFIG);
  if (!existsSync(path))
    throw new UserError(`${path}: no such file (a PEFT adapter folder has adapter_config.json and ${ADAPTER_WEIGHTS})`);
  const c = readJson(path, AdapterConfigSchema);
  const refuse = (what: string) => {
    throw new UserError(`${path}: ${what} is not supported`);
  };
  if (c.use_dora) refuse('use_dora: true (DoRA)');
  if (c.bias !== undefined && c.bias !== 'none') refuse(`bias: "${c.bias}"`);
  if (c.lora_bias) refuse('lora_bias: true');
  if (c.fan_in_fan_out) refuse('fan_in_fan_out: true');
  if (c.modules_to_save && c.modules_to_save.length > 0) refuse(`modules_to_save (${c.modules_to_save.join(', ')})`);
  if (c.rank_pattern && Object.keys(c.rank_pattern).length > 0) refuse('a non-empty rank_pattern');
  if (c.alpha_pattern && Object.keys(c.alpha_pattern).length > 0) refuse('a non-empty alpha_pattern');
  return {
    r: c.r,
    alpha: c.lora_alpha,
    useRslora: c.use_rslora ?? false,
    targetModules: c.target_modules ?? [],
    baseModelNameOrPath: c.base_model_name_or_path ?? null,
  };
}

/**
 * Load a PEFT adapter folder onto the decoder (replacing any attached adapters). Every tensor must name a linear layer
 * of this decoder with the config's rank and the layer's sizes; anything else is a UserError naming the file and key,
 * and nothing is attached.
 */
export function loadPeftAdapter(decoder: HfDecoder, dir: string, trainable = true): PeftAdapterConfig {
  const config = readPeftConfig(dir);
  const file = join(dir, ADAPTER_WEIGHTS);
  const entries = readSafetensorsHeader(file);
  const linears = decoder.linears();
  const { modulePrefix, legacyModulePrefixes } = decoder.layout;
  const found = new Map<string, { a?: string; b?: string }>();
  for (const key of entries.keys()) {
    const m = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/.exec(key);
    if (!m)
      throw new UserError(
        `${file}: tensor ${key} is not a LoRA weight (base_model.model.<module>.lora_A.weight / lora_B.weight)`,
      );
    let module = m[1];
    // A legacy prefix may be a prefix of the current one (Qwen2.5-VL: `model.` and `model.language_model.`).
    if (!module.startsWith(modulePrefix))
      for (const legacy of legacyModulePrefixes)
        if (module.startsWith(legacy)) module = modulePrefix + module.slice(legacy.length);
    if (!linears.has(module))
      throw new UserError(
        `${file}: tensor ${key} targets module ${m[1]}, which this ${decoder.config.family} language model does not have`,
      );
    const slot = found.get(module) ?? {};
    slot[m[2] === 'A' ? 'a' : 'b'] = key;
    found.set(module, slot);
  }
  if (found.size === 0) throw new UserError(`${file}: holds no LoRA weights`);
  // Check every shape before reading anything.
  const expected = new Map<string, number[]>();
  for (const [module, { a, b }] of found) {
    if (!a || !b)
      throw new UserError(`${file}: module ${module} has lora_${a ? 'A' : 'B'} but no lora_${a ? 'B' : 'A'}`);
    const [inDim, outDim] = linears.get(module)!.w.shape as [number, number];
    expected.set(a, [config.r, inDim]);
    expected.set(b, [outDim, config.r]);
  }
  const tensors = CheckpointTensors.fromEntries(dir, file, entries);
  tensors.checkShapes(expected, `the base model and r = ${config.r} in ${ADAPTER_CONFIG}`);
  detachLora(decoder);
  const scale = scaleOf(config.alpha, config.r, config.useRslora);
  for (const [module, { a, b }] of found) {
    const l = linears.get(module)!;
    const [inDim, outDim] = l.w.shape as [number, number];
    const aT = transpose(tensors.read(a!).data, config.r, inDim); // [in, r]
    const bT = transpose(tensors.read(b!).data, outDim, config.r); // [r, out]
    l.lora = {
      a: tf.variable(tf.tensor2d(aT, [inDim, config.r]), trainable),
      b: tf.variable(tf.tensor2d(bT, [config.r, outDim]), trainable),
      scale,
    };
  }
  return config;
}

function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return out;
}

/** adapter_config.json as PEFT 0.17.1 writes it: every LoraConfig field, keys sorted, indent 2, no final newline. */
function peftConfigJson(config: PeftAdapterConfig): string {
  const fields: Record<string, unknown> = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: config.baseModelNameOrPath,
    bias: 'none',
    corda_config: null,
    eva_config: null,
    exclude_modules: null,
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: config.alpha,
    lora_bias: false,
    lora_dropout: 0.0,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    peft_type: 'LORA',
    qalora_group_size: 16,
    r: config.r,
    rank_pattern: {},
    revision: null,
    target_modules: config.targetModules,
    target_parameters: null,
    task_type: 'CAUSAL_LM',
    trainable_token_indices: null,
    use_dora: false,
    use_qalora: false,
    use_rslora: config.useRslora,
  };
  return pythonJson(fields, 0);
}

/** Python json.dumps(indent=2, sort_keys=True) for the values above (lora_dropout stays a float: 0.0). */
function pythonJson(value: unknown, depth: number, key = ''): string {
  const pad = '  '.repeat(depth + 1);
  const end = '  '.repeat(depth);
  if (value === null) return 'null';
  if (typeof value === 'number')
    return key === 'lora_dropout' && Number.isInteger(value) ? `${value}.0` : JSON.stringify(value);
  if (typeof value === 'string')
    return JSON.stringify(value).replace(
      /[\u007f-\uffff]/g,
      (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value))
    return value.length === 0 ? '[]' : `[\n${value.map((v) => pad + pythonJson(v, depth + 1)).join(',\n')}\n${end}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return '{}';
  return `{\n${entries.map(([k, v]) => `${pad}${JSON.stringify(k)}: ${pythonJson(v, depth + 1, k)}`).join(',\n')}\n${end}}`;
}

/** target_modules for PEFT: the projection names, or for a language model inside a vision-language model a regex
 *  limited to it (PEFT full-matches a string against module paths; bare names would also catch the vision tower). */
export function targetModulesFor(decoder: HfDecoder, projections: string[]): string[] | string {
  if (decoder.layout.modulePrefix === 'model.') return projections;
  const escaped = decoder.layout.modulePrefix.replace(/\./g, '\\.');
  return `${escaped}layers\\.\\d+\\.(self_attn|mlp)\\.(${projections.join('|')})`;
}

export interface SaveAdapterOptions {
  /** base_model_name_or_path: a Hub id or the base checkpoint folder. */
  baseModelNameOrPath: string | null;
  r: number;
  alpha: number;
  useRslora?: boolean;
  /** Override target_modules (default: the adapted projections, see targetModulesFor). */
  targetModules?: string[] | string;
}

/** Write the attached adapters as a PEFT folder (both files atomically). */
export function savePeftAdapter(decoder: HfDecoder, dir: string, options: SaveAdapterOptions): void {
  const tensors = new Map<string, NamedTensor>();
  const projections: string[] = [];
  for (const l of decoder.linears().values()) {
    if (!l.lora) continue;
    const [inDim, outDim] = l.w.shape as [number, number];
    const r = l.lora.a.shape[1] as number;
    if (r !== options.r) throw new Error(`savePeftAdapter: ${l.module} has rank ${r}, options say ${options.r}`);
    tensors.set(`${KEY_PREFIX}${l.module}.lora_A.weight`, {
      shape: [r, inDim],
      data: transpose(l.lora.a.dataSync() as Float32Array, inDim, r),
    });
    tensors.set(`${KEY_PREFIX}${l.module}.lora_B.weight`, {
      shape: [outDim, r],
      data: transpose(l.lora.b.dataSync() as Float32Array, r, outDim),
    });
    const p = l.module.slice(l.module.lastIndexOf('.') + 1);
    if (!projections.includes(p)) projections.push(p);
  }
  if (tensors.size === 0) throw new Error('savePeftAdapter: no adapters are attached');
  const config: PeftAdapterConfig = {
    r: options.r,
    alpha: options.alpha,
    useRslora: options.useRslora ?? false,
    targetModules: options.targetModules ?? targetModulesFor(decoder, projections),
    baseModelNameOrPath: options.baseModelNameOrPath,
  };
  writeFileAtomic(join(dir, ADAPTER_WEIGHTS), encodeSafetensors(tensors, { format: 'pt' }));
  writeFileAtomic(join(dir, ADAPTER_CONFIG), peftConfigJson(config));
}

/**
 * The local base checkpoint an adapter names in base_model_name_or_path, or null when it names none that exists here
 * (a Hub id, say). A relative path is tried against the adapter folder first (PEFT writes what it was given), then
 * the working directory.
 */
export function localBaseOf(adapterDir: string, config: PeftAdapterConfig): string | null {
  const base = config.baseModelNameOrPath;
  if (!base) return null;
  const candidates = isAbsolute(base) ? [base] : [resolve(adapterDir, base), resolve(base)];
  return candidates.find((c) => existsSync(join(c, 'config.json')) && statSync(c).isDirectory()) ?? null;
}
