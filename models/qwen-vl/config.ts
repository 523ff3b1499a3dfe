// What a Qwen-VL config.json says beside the language model's decoder settings: the special token ids that frame
// images, the multimodal RoPE (mrope_section, layout, head_dim, rope_theta) and the vision_config fields both towers
// share. Each architecture's reader (models/qwen2_5_vl/config.ts, models/qwen3_vl/config.ts) adds its own fields and
// class defaults.
//
// Two layouts exist: transformers 4.57 nests the text settings under `text_config` (and Qwen2.5-VL's file then has
// `architectures` only inside text_config, a quirk of Qwen2_5_VLConfig.__setattr__), while the Hub's Qwen2.5-VL files
// are flat (text keys at the top level, `rope_scaling: {"type": "mrope", …}`). transformers v5 writes
// `rope_parameters` (with rope_theta inside) instead of rope_scaling / rope_theta. All are read.
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import type { MropeLayout, MropeSpec } from '../layers/mrope.ts';

/** Activations a Qwen-VL vision MLP may name (transformers' ACT2FN keys) and what they compute. */
const ACTIVATIONS = {
  silu: 'silu',
  swish: 'silu',
  gelu: 'gelu',
  gelu_pytorch_tanh: 'gelu_tanh',
  gelu_new: 'gelu_tanh',
} as const;
export type QwenVisionActivation = (typeof ACTIVATIONS)[keyof typeof ACTIVATIONS];

/** The vision_config fields both towers have. */
export interface QwenVisionCommon {
  depth: number;
  hiddenSize: number;
  intermediateSize: number;
  numHeads: number;
  inChannels: number;
  patchSize: number;
  temporalPatchSize: number;
  spatialMergeSize: number;
  /** The language model's hidden size: the merger's output width. */
  outHiddenSize: number;
  hiddenAct: QwenVisionActivation;
}

/** Class defaults of one vision config class (transformers 4.57), keyed as in the JSON. */
export interface QwenVisionDefaults {
  depth: number;
  hidden_size: number;
  intermediate_size: number;
  num_heads: number;
  patch_size: number;
  out_hidden_size: number;
  hidden_act: string;
}

const positiveInt = z.number().int().positive();
const commonSchema = z
  .object({
    model_type: z.string().optional(),
    depth: positiveInt.optional(),
    hidden_size: positiveInt.optional(),
    intermediate_size: positiveInt.optional(),
    num_heads: positiveInt.optional(),
    in_channels: positiveInt.optional(),
    patch_size: positiveInt.optional(),
    temporal_patch_size: positiveInt.optional(),
    spatial_merge_size: positiveInt.optional(),
    out_hidden_size: positiveInt.optional(),
    hidden_act: z.string().optional(),
  })
  .loose(); // real files carry more (Qwen2.5-VL's Hub files: in_chans, spatial_patch_size, which the class ignores)

/**
 * The shared vision_config fields, class defaults filled in and checked: head_dim = hidden_size / num_heads must be a
 * multiple of 4 (the 2-D rotary splits each half between rows and columns).
 */
export function parseVisionCommon(
  raw: unknown,
  modelType: string,
  defaults: QwenVisionDefaults,
  source: string,
): QwenVisionCommon {
  const v = parseOrFail(commonSchema, raw ?? {}, `${source}: vision_config.`);
  if (v.model_type !== undefined && v.model_type !== modelType)
    throw new UserError(`${source}: vision_config.model_type is ${v.model_type}, expected ${modelType}`);
  const act = v.hidden_act ?? defaults.hidden_act;
  const hiddenAct = (ACTIVATIONS as Record<string, QwenVisionActivation>)[act];
  if (!hiddenAct)
    throw new UserError(
      `${source}: vision_config.hidden_act ${act} is not supported (${Object.keys(ACTIVATIONS).join(', ')})`,
    );
  const config: QwenVisionCommon = {
    depth: v.depth ?? defaults.depth,
    hiddenSize: v.hidden_size ?? defaults.hidden_size,
    intermediateSize: v.intermediate_size ?? defaults.intermediate_size,
    numHeads: v.num_heads ?? defaults.num_heads,
    inChannels: v.in_channels ?? 3,
    patchSize: v.patch_size ?? defaults.patch_size,
    temporalPatchSize: v.temporal_patch_size ?? 2,
    spatialMergeSize: v.spatial_merge_size ?? 2,
    outHiddenSize: v.out_hidden_size ?? defaults.out_hidden_size,
    hiddenAct,
  };
  const headDim = config.hiddenSize / config.numHeads;
  if (!Number.isInteger(headDim) || headDim % 4 !== 0)
    throw new UserError(
      `${source}: vision_config.hidden_size ${config.hiddenSize} / num_heads ${config.numHeads} is not a head size divisible by 4`,
    );
  if (config.inChannels !== 3)
    throw new UserError(`${source}: vision_config.in_channels ${config.inChannels} is not supported (RGB images: 3)`);
  return config;
}

/** Indices into the tower's blocks (fullatt_block_indexes, deepstack_visual_indexes), each checked against depth. */
export function blockIndexes(
  raw: unknown,
  key: string,
  fallback: readonly number[],
  depth: number,
  source: string,
): number[] {
  const value = (raw as Record<string, unknown> | undefined)?.[key];
  const list = parseOrFail(
    z.array(z.number().int().nonnegative()),
    value ?? [...fallback],
    `${source}: vision_config.${key}: `,
  );
  for (const i of list)
    if (i >= depth) throw new UserError(`${source}: vision_config.${key} names block ${i}, the tower has ${depth}`);
  return list;
}

/** The image-related token ids and the multimodal RoPE of a Qwen-VL config, with the vision config `V`. */
export interface QwenVlSetup<V> {
  vision: V;
  imageTokenId: number;
  videoTokenId: number;
  visionStartTokenId: number;
  visionEndTokenId: number;
  mrope: MropeSpec;
}

/** How one architecture reads its text side: the class defaults it falls back on and its RoPE layout. */
export interface QwenTextDefaults {
  layout: MropeLayout;
  /** mrope_section when rope_scaling has none (null: the key is required, as Qwen2.5-VL's modeling code indexes it). */
  section: readonly [number, number, number] | null;
  hiddenSize: number;
  numAttentionHeads: number;
  /** head_dim's class default, or null where the class has no such key (head_dim = hidden_size / heads). */
  headDim: number | null;
  ropeTheta: number;
}

const ropeSchema = z
  .object({
    rope_type: z.string().optional(),
    type: z.string().optional(),
    rope_theta: z.number().positive().optional(),
    mrope_section: z
      .tuple([z.number().int().nonnegative(), z.number().int().nonnegative(), z.number().int().nonnegative()])
      .optional(),
  })
  .loose()
  .nullable()
  .optional();
const textSchema = z
  .object({
    hidden_size: positiveInt.optional(),
    num_attention_heads: positiveInt.optional(),
    head_dim: positiveInt.nullable().optional(),
    rope_theta: z.number().positive().optional(),
    rope_scaling: ropeSchema,
    rope_parameters: ropeSchema,
  })
  .loose();
const topSchema = z
  .object({
    architectures: z.array(z.string()).optional(),
    text_config: z.record(z.string(), z.unknown()).optional(),
    image_token_id: z.number().int().nonnegative().default(151655),
    video_token_id: z.number().int().nonnegative().default(151656),
    vision_start_token_id: z.number().int().nonnegative().default(151652),
    vision_end_token_id: z.number().int().nonnegative().default(151653),
  })
  .loose();

/** The model class a Qwen-VL config.json names: top-level `architectures`, else text_config's (4.57's Qwen2.5-VL files). */
export function qwenVlArchitecture(raw: unknown): string | null {
  const top = topSchema.safeParse(raw);
  if (!top.success) return null;
  const inner = (top.data.text_config as { architectures?: unknown } | undefined)?.architectures;
  const list = top.data.architectures ?? (Array.isArray(inner) ? (inner as unknown[]) : []);
  return typeof list[0] === 'string' ? list[0] : null;
}

/** The token ids and multimodal RoPE of a parsed config.json (nested or flat, see the header). */
export function parseQwenVlSetup<V>(raw: unknown, vision: V, text: QwenTextDefaults, source: string): QwenVlSetup<V> {
  const top = parseOrFail(topSchema, raw, `${source}: `);
  const nested = top.text_config !== undefined;
  const where = nested ? 'text_config.' : '';
  const t = parseOrFail(textSchema, nested ? top.text_config : raw, `${source}: ${where}`);
  const rope = t.rope_scaling ?? t.rope_parameters ?? null;
  const ropeKey = `${where}${!t.rope_scaling && t.rope_parameters ? 'rope_parameters' : 'rope_scaling'}`;
  const type = rope?.rope_type ?? rope?.type ?? 'default';
  if (type !== 'default' && type !== 'mrope')
    throw new UserError(`${source}: ${ropeKey}.rope_type '${type}' is not supported (default or mrope)`);
  const section = rope?.mrope_section ?? text.section;
  if (!section) throw new UserError(`${source}: ${ropeKey}.mrope_section is missing (the multimodal RoPE needs it)`);
  const heads = t.num_attention_heads ?? text.numAttentionHeads;
  const headDim = t.head_dim ?? text.headDim ?? (t.hidden_size ?? text.hiddenSize) / heads;
  if (!Number.isInteger(headDim))
    throw new UserError(`${source}: ${where}hidden_size is not a multiple of num_attention_heads ${heads}`);
  if (section[0] + section[1] + section[2] !== headDim / 2)
    throw new UserError(
      `${source}: ${ropeKey}.mrope_section [${section}] sums to ${section[0] + section[1] + section[2]}, not head_dim / 2 = ${headDim / 2}`,
    );
  return {
    vision,
    imageTokenId: top.image_token_id,
    videoTokenId: top.video_token_id,
    visionStartTokenId: top.vision_start_token_id,
    visionEndTokenId: top.vision_end_token_id,
    mrope: {
      section: [section[0], section[1], section[2]],
      layout: text.layout,
      headDim,
      theta: t.rope_theta ?? rope?.rope_theta ?? text.ropeTheta,
    },
  };
}
