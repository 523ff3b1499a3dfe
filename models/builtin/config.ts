// The built-in model's architecture as a zod schema. It is written to a checkpoint's config.json and checked when
// the checkpoint is loaded, so weights are never read into a model of another shape. The defaults are the shipped
// size: 2.26 M parameters (d 192, 6 layers, 4 heads, MLP 512), small enough for GRPO on two CPU cores (see
// bench/model.bench.ts for its speed).
import { z } from 'zod';

export const MODEL_KIND = 'metrl-vlm';
/** Bumped when the meaning of the weights or of config.json changes. */
export const CHECKPOINT_FORMAT_VERSION = 1;

export const ArchitectureSchema = z
  .object({
    kind: z.literal(MODEL_KIND).default(MODEL_KIND),
    vocabSize: z.number().int().min(8).max(4096).default(101),
    dModel: z.number().int().min(8).max(2048).default(192),
    nLayers: z.number().int().min(1).max(48).default(6),
    nHeads: z.number().int().min(1).max(32).default(4),
    /** Hidden width of the MLP. */
    dMlp: z.number().int().min(8).max(8192).default(512),
    /** Longest sequence (prompt + completion) the model is used with; RoPE itself has no hard limit. */
    maxContext: z.number().int().min(16).max(16384).default(2048),
    ropeBase: z.number().positive().default(10000),
    /** How tokens get their RoPE positions (models/builtin/positions.ts): one after another, or on a grid of lines. */
    positions: z.enum(['sequence', 'grid']).default('sequence'),
    normEps: z.number().positive().max(0.1).default(1e-5),
    /** Images are resized to imageSize × imageSize RGB and cut into patchSize × patchSize patches, one token each. */
    imageSize: z.number().int().min(4).max(1024).default(64),
    patchSize: z.number().int().min(2).max(256).default(16),
  })
  .strict()
  .refine((a) => a.dModel % a.nHeads === 0 && (a.dModel / a.nHeads) % 2 === 0, {
    message: 'dModel / nHeads must be an even integer (RoPE rotates pairs)',
  })
  .refine((a) => a.imageSize % a.patchSize === 0, { message: 'imageSize must be a multiple of patchSize' });

export type Architecture = z.infer<typeof ArchitectureSchema>;

export const LoraConfigSchema = z
  .object({
    r: z.number().int().min(1).max(512).default(16),
    alpha: z.number().positive().default(32),
    /** Which projections get adapters (PEFT target_modules names). */
    targetModules: z
      .array(z.enum(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj']))
      .min(1)
      .default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj']),
  })
  .strict();
export type LoraConfig = z.infer<typeof LoraConfigSchema>;

export function defaultArchitecture(overrides: Partial<Architecture> = {}): Architecture {
  return ArchitectureSchema.parse(overrides);
}

export const headDim = (a: Architecture): number => a.dModel / a.nHeads;
export const patchesPerImage = (a: Architecture): number => (a.imageSize / a.patchSize) ** 2;
export const patchDim = (a: Architecture): number => a.patchSize * a.patchSize * 3;
