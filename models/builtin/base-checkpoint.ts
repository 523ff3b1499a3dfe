// The built-in model's base checkpoint, in a layout other tools read:
//   config.json (format, version, architecture) + model.safetensors + tokenizer.json
// config.json's `format: "metrl-vlm"` is what models/registry.ts recognises the built-in model by. Every file is
// written atomically. Loading checks everything against the architecture and fails with one line (UserError) naming
// the missing file, the unexpected tensor or the mismatched shape.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { UserError, describeZodError } from '../../core/errors.ts';
import { writeFileAtomic, writeJsonAtomic } from '../../core/files.ts';
import { ArchitectureSchema, CHECKPOINT_FORMAT_VERSION, MODEL_KIND } from './config.ts';
import { BuiltinPolicy } from './policy.ts';
import { CharTokenizer } from './tokenizer.ts';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../safetensors.ts';
import { diskShapes, weightEntries } from './weights.ts';
import { fromDisk, readJsonValue, requireFiles, sameShape, toDisk } from './checkpoint-io.ts';

export const BASE_FILES = ['config.json', 'model.safetensors', 'tokenizer.json'] as const;

const BaseConfigSchema = z
  .object({
    format: z.literal(MODEL_KIND),
    formatVersion: z.literal(CHECKPOINT_FORMAT_VERSION),
    architecture: z.record(z.string(), z.unknown()),
  })
  .loose();

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

/** Every tensor the architecture needs, present and of its shape, and no other: checked before anything is built. */
function checkShapes(dir: string, tensors: Map<string, NamedTensor>, expected: Map<string, number[]>): void {
  for (const [name, shape] of expected) {
    const t = tensors.get(name);
    if (!t)
      throw new UserError(
        `${dir}: model.safetensors lacks tensor ${name} that config.json's architecture needs (another architecture?)`,
      );
    if (!sameShape(t.shape, shape))
      throw new UserError(
        `${dir}: tensor ${name} has shape [${t.shape}] but config.json's architecture needs [${shape}]`,
      );
  }
  const extra = [...tensors.keys()].filter((n) => !expected.has(n));
  if (extra.length > 0)
    throw new UserError(
      `${dir}: model.safetensors has tensors this architecture does not use (${extra.slice(0, 3).join(', ')}${extra.length > 3 ? '…' : ''})`,
    );
}

/** Load a base checkpoint into a new policy (no adapters attached). */
export function loadBaseCheckpoint(dir: string): BuiltinPolicy {
  requireFiles(dir, BASE_FILES, 'checkpoint');
  const configPath = join(dir, 'config.json');
  const config = BaseConfigSchema.safeParse(readJsonValue(configPath));
  if (!config.success) throw new UserError(describeZodError(config.error, `${configPath}: `));
  const arch = ArchitectureSchema.safeParse(config.data.architecture);
  if (!arch.success) throw new UserError(describeZodError(arch.error, `${configPath}: architecture.`));
  const tokenizer = CharTokenizer.fromJson(readJsonValue(join(dir, 'tokenizer.json')), join(dir, 'tokenizer.json'));
  const file = decodeSafetensors(readFileSync(join(dir, 'model.safetensors')), join(dir, 'model.safetensors'));
  checkShapes(dir, file.tensors, diskShapes(arch.data));
  const policy = BuiltinPolicy.create({ architecture: arch.data, tokenizer });
  const entries = weightEntries(policy.weights);
  try {
    for (const e of entries) {
      const t = file.tensors.get(e.name);
      if (!t) throw new UserError(`${dir}: model.safetensors lacks tensor ${e.name} (another architecture?)`);
      const expected = e.transposeOnDisk ? [...e.variable.shape].reverse() : e.variable.shape;
      if (!sameShape(t.shape, expected)) {
        throw new UserError(
          `${dir}: tensor ${e.name} has shape [${t.shape}] but config.json's architecture needs [${expected}]`,
        );
      }
      const value = fromDisk(t, e.transposeOnDisk);
      e.variable.assign(value);
      value.dispose();
    }
    const known = new Set(entries.map((e) => e.name));
    const extra = [...file.tensors.keys()].filter((n) => !known.has(n));
    if (extra.length > 0)
      throw new UserError(
        `${dir}: model.safetensors has tensors this architecture does not use (${extra.slice(0, 3).join(', ')}…)`,
      );
  } catch (error) {
    policy.dispose();
    throw error;
  }
  return policy;
}
