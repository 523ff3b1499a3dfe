// The built-in model's LoRA adapters in PEFT layout, so PEFT reads them:
//   adapter_config.json + adapter_model.safetensors with tensors named
//     base_model.model.<module>.lora_A.weight [r, in] and ….lora_B.weight [out, r]
// Every file is written atomically; loading fails with one line (UserError) naming the missing tensor or the
// mismatched shape. BuiltinPolicy's saveAdapter / loadAdapter (the Learner contract) call these.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { UserError, describeZodError } from '../../core/errors.ts';
import { writeFileAtomic, writeJsonAtomic } from '../../core/files.ts';
import { Rng } from '../../core/rng.ts';
import { LoraConfigSchema, type LoraConfig } from './config.ts';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../safetensors.ts';
import { loraAdapters, type LoraHost } from './lora.ts';
import { fromDisk, readJsonValue, requireFiles, sameShape, toDisk } from './checkpoint-io.ts';

export const ADAPTER_FILES = ['adapter_config.json', 'adapter_model.safetensors'] as const;
const ADAPTER_PREFIX = 'base_model.model.';

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

/** Write the policy's LoRA adapters in PEFT layout. */
export function saveAdapter(policy: LoraHost, dir: string, options: { baseModel?: string } = {}): void {
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
export function loadAdapter(policy: LoraHost, dir: string): LoraConfig {
  requireFiles(dir, ADAPTER_FILES, 'adapter');
  const configPath = join(dir, 'adapter_config.json');
  const parsed = AdapterConfigSchema.safeParse(readJsonValue(configPath));
  if (!parsed.success) throw new UserError(describeZodError(parsed.error, `${configPath}: `));
  const config = LoraConfigSchema.safeParse({
    r: parsed.data.r,
    alpha: parsed.data.lora_alpha,
    targetModules: parsed.data.target_modules,
  });
  if (!config.success) throw new UserError(describeZodError(config.error, `${configPath}: `));
  const file = decodeSafetensors(
    readFileSync(join(dir, 'adapter_model.safetensors')),
    join(dir, 'adapter_model.safetensors'),
  );
  const lora = policy.attachLora(config.data, new Rng(0, 'lora-load'));
  for (const a of loraAdapters(lora)) {
    for (const [suffix, variable] of [
      ['lora_A', a.a],
      ['lora_B', a.b],
    ] as const) {
      const name = `${ADAPTER_PREFIX}${a.module}.${suffix}.weight`;
      const t = file.tensors.get(name);
      if (!t) {
        policy.detachLora();
        throw new UserError(`${dir}: adapter_model.safetensors lacks ${name} (adapter for another architecture?)`);
      }
      const expected = [...variable.shape].reverse();
      if (!sameShape(t.shape, expected)) {
        policy.detachLora();
        throw new UserError(
          `${dir}: ${name} has shape [${t.shape}] but this model needs [${expected}] (adapter for another architecture?)`,
        );
      }
      const value = fromDisk(t, true);
      variable.assign(value);
      value.dispose();
    }
  }
  return config.data;
}
