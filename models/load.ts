// Finding and loading the policy behind `--checkpoint DIR`, for evaluation and `metrl serve`. DIR may be
//   a base checkpoint            config.json + model.safetensors (+ tokenizer.json); its architecture is looked up in
//                                models/registry.ts by config.json
//   a LoRA adapter (PEFT)        adapter_config.json + adapter_model.safetensors, on --base, else the base named by
//                                its base_model_name_or_path (a name that is no folder here is refused), else the
//                                shipped base (checkpoints/base) for an adapter that names none
//   a training run folder        its checkpoints/latest adapter, on the base the run started from
// The tfjs backend is chosen first (and printed); the result says which files were used, for config.json.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { UserError } from '../core/errors.ts';
import { readJson } from '../core/files.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import type { Policy } from './policy.ts';
import { loadBaseModel, modelTypeOf } from './registry.ts';

export interface LoadedPolicy {
  policy: Policy;
  base: string;
  adapter: string | null;
  /** The training step of the adapter (its folder is step-N), or null for a base or an adapter named otherwise. */
  adapterStep: number | null;
  backend: string;
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
const has = (dir: string, file: string) => existsSync(join(dir, file));

/** A JSON object, or null when the file is missing or not one (the folder is then told apart by other files). */
function readJsonOr(path: string): Record<string, unknown> | null {
  try {
    return readJson(path, z.record(z.string(), z.unknown()));
  } catch {
    return null;
  }
}

/** The shipped base checkpoint: checkpoints/base, or the only base checkpoint under checkpoints/. */
export function shippedBase(): string | null {
  const preferred = join(CHECKPOINTS_DIR, 'base');
  if (has(preferred, 'model.safetensors')) return preferred;
  if (!isDir(CHECKPOINTS_DIR)) return null;
  const found = readdirSync(CHECKPOINTS_DIR)
    .map((n) => join(CHECKPOINTS_DIR, n))
    .filter((d) => has(d, 'model.safetensors') && has(d, 'config.json'));
  return found.length === 1 ? found[0] : null;
}

/** Where a training run keeps its newest adapter: checkpoints/latest names the folder. */
function runAdapter(dir: string): string | null {
  const latest = join(dir, 'checkpoints', 'latest');
  if (!existsSync(latest)) return null;
  const name = readFileSync(latest, 'utf8').trim();
  const step = join(dir, 'checkpoints', name);
  if (has(step, 'adapter_config.json')) return step;
  if (has(join(step, 'adapter'), 'adapter_config.json')) return join(step, 'adapter');
  throw new UserError(`${dir}: checkpoints/latest names ${name}, which holds no adapter`);
}

/**
 * A base model folder: the built-in model's files, or what save_pretrained writes (config.json with model.safetensors
 * or a shard index; config.json + tokenizer.json is also taken as one, so a folder missing its weights is reported by
 * its loader rather than mistaken for something else). A training run's folder has a config.json but neither.
 */
function isBaseFolder(dir: string): boolean {
  return (
    has(dir, 'model.safetensors') ||
    has(dir, 'model.safetensors.index.json') ||
    (has(dir, 'config.json') && has(dir, 'tokenizer.json'))
  );
}

/** A base named in a config, relative to where that config lives, if it exists. */
function namedBase(value: unknown, relativeTo: string): string | null {
  if (typeof value !== 'string' || value.trim() === '') return null;
  const candidates = isAbsolute(value) ? [value] : [resolve(relativeTo, value), resolve(value)];
  return candidates.find((c) => isBaseFolder(c)) ?? null;
}

/** Decide which base and adapter folders `--checkpoint DIR [--base BASE]` means. */
export function resolveCheckpoint(dir: string, base?: string): { base: string; adapter: string | null } {
  const path = resolve(dir);
  if (!isDir(path)) throw new UserError(`--checkpoint ${dir}: no such folder`);
  if (base !== undefined && !isDir(resolve(base))) throw new UserError(`--base ${base}: no such folder`);
  if (isBaseFolder(path)) {
    if (base !== undefined)
      throw new UserError(`--checkpoint ${dir} is a base checkpoint already; --base applies to adapters`);
    return { base: path, adapter: null };
  }
  let adapter: string | null = has(path, 'adapter_config.json') ? path : runAdapter(path);
  if (!adapter)
    throw new UserError(
      `--checkpoint ${dir}: neither a base checkpoint, a LoRA adapter nor a training run with checkpoints`,
    );
  adapter = resolve(adapter);
  const named = readJsonOr(join(adapter, 'adapter_config.json'))?.base_model_name_or_path;
  const fromAdapter = namedBase(named, adapter);
  const runConfig = readJsonOr(join(path, 'config.json'));
  const fromRun = namedBase(runConfig?.checkpoint ?? runConfig?.base ?? runConfig?.baseCheckpoint, path);
  // An adapter that names a base which is not here was trained on another model: the shipped base would load and then
  // fail on its target modules, far from the cause. Only an adapter that names no base falls back to the shipped one.
  if (
    base === undefined &&
    fromAdapter === null &&
    fromRun === null &&
    typeof named === 'string' &&
    named.trim() !== ''
  ) {
    throw new UserError(
      `--checkpoint ${dir}: the adapter's base model ${named} (base_model_name_or_path in adapter_config.json) is not a folder here; name the base model folder with --base DIR`,
    );
  }
  const chosen = base !== undefined ? resolve(base) : (fromAdapter ?? fromRun ?? shippedBase());
  if (!chosen) throw new UserError(`--checkpoint ${dir}: an adapter needs its base model; name it with --base DIR`);
  return { base: chosen, adapter };
}

/** The model_type of the base a `--checkpoint DIR [--base BASE]` resolves to, without loading it (registry.ts). */
export function checkpointModelType(dir: string, base?: string): string {
  return modelTypeOf(resolveCheckpoint(dir, base).base);
}

/** "…/checkpoints/step-12" or "…/step-12/adapter" → 12. */
function adapterStepOf(adapter: string | null): number | null {
  const match = adapter === null ? null : /(?:^|[\\/])step-(\d+)(?:[\\/]adapter)?$/.exec(adapter);
  return match ? Number(match[1]) : null;
}

/**
 * Choose the backend, then load the base through the registry and attach the adapter, if any. `log` gets the
 * "tfjs backend: …" line once everything has loaded, so that a checkpoint error is the only line a user sees.
 */
export async function loadPolicy(
  dir: string,
  options: { base?: string; backend?: string; log?: (line: string) => void; hostWeights?: boolean } = {},
): Promise<LoadedPolicy> {
  const where = resolveCheckpoint(dir, options.base);
  const { initBackend, backendLine } = await import('./backend.ts');
  const backend = await initBackend(options.backend, null);
  // ONNX Runtime reads a Hugging Face checkpoint's weights from host arrays (policy.ts LoadOptions).
  const policy = await loadBaseModel(where.base, { hostWeights: options.hostWeights });
  if (where.adapter) policy.loadAdapter(where.adapter);
  options.log?.(backendLine(backend));
  return {
    policy,
    base: where.base,
    adapter: where.adapter,
    adapterStep: adapterStepOf(where.adapter),
    backend: backend.name,
  };
}
