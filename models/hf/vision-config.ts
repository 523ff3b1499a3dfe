// The vision half of a Hugging Face vision-language config.json: the `vision_config` sub-config (idefics3_vision or
// siglip_vision_model) and the top-level fields that connect the vision tower to the text model (Idefics3's
// scale_factor and image_token_id; Gemma 3's mm_tokens_per_image and image/boi/eoi token ids). Layer: models.
//
// transformers writes a sub-config without the values that equal its class's defaults, so a field missing here means
// the class default (Idefics3VisionConfig, SiglipVisionConfig, Idefics3Config, Gemma3Config of transformers 4.57), not
// an error. The text_config is read by models/hf/config.ts.
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';

export type VisionModelType = 'idefics3_vision' | 'siglip_vision_model';

/** Activations the vision MLP may use: tanh-approximated GELU (every SigLIP checkpoint) or the exact one. */
type VisionActivation = 'gelu_tanh' | 'gelu';

export interface VisionConfig {
  modelType: VisionModelType;
  hiddenSize: number;
  intermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numChannels: number;
  imageSize: number;
  patchSize: number;
  hiddenAct: VisionActivation;
  layerNormEps: number;
}

interface VisionDefaults {
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_channels: number;
  image_size: number;
  patch_size: number;
  hidden_act: string;
  layer_norm_eps: number;
}

/** Class defaults of the two vision configs (transformers 4.57). */
const VISION_DEFAULTS: Record<VisionModelType, VisionDefaults> = {
  idefics3_vision: {
    hidden_size: 1152,
    intermediate_size: 3072,
    num_hidden_layers: 12,
    num_attention_heads: 16,
    num_channels: 3,
    image_size: 224,
    patch_size: 32,
    hidden_act: 'gelu_pytorch_tanh',
    layer_norm_eps: 1e-6,
  },
  siglip_vision_model: {
    hidden_size: 768,
    intermediate_size: 3072,
    num_hidden_layers: 12,
    num_attention_heads: 12,
    num_channels: 3,
    image_size: 224,
    patch_size: 16,
    hidden_act: 'gelu_pytorch_tanh',
    layer_norm_eps: 1e-6,
  },
};

const ACTIVATIONS: Record<string, VisionActivation> = {
  gelu_pytorch_tanh: 'gelu_tanh',
  gelu_new: 'gelu_tanh',
  gelu_fast: 'gelu_tanh',
  gelu: 'gelu',
};

const positiveInt = z.number().int().positive();
const visionSchema = z.object({
  model_type: z.enum(['idefics3_vision', 'siglip_vision_model']).optional(),
  hidden_size: positiveInt.optional(),
  intermediate_size: positiveInt.optional(),
  num_hidden_layers: positiveInt.optional(),
  num_attention_heads: positiveInt.optional(),
  num_channels: positiveInt.optional(),
  image_size: positiveInt.optional(),
  patch_size: positiveInt.optional(),
  hidden_act: z.string().optional(),
  layer_norm_eps: z.number().positive().optional(),
});

/**
 * Parse a `vision_config` object. `expected` is the type its parent implies (idefics3 -> idefics3_vision,
 * gemma3 -> siglip_vision_model); `source` names the file in errors.
 */
export function parseVisionConfig(raw: unknown, expected: VisionModelType, source = 'config.json'): VisionConfig {
  const v = parseOrFail(visionSchema, raw ?? {}, `${source}: vision_config.`);
  const modelType = v.model_type ?? expected;
  if (modelType !== expected)
    throw new UserError(`${source}: vision_config.model_type is ${modelType}, expected ${expected}`);
  const d = VISION_DEFAULTS[modelType];
  const act = v.hidden_act ?? d.hidden_act;
  const hiddenAct = ACTIVATIONS[act];
  if (!hiddenAct)
    throw new UserError(
      `${source}: vision_config.hidden_act ${act} is not supported (${Object.keys(ACTIVATIONS).join(', ')})`,
    );
  const config: VisionConfig = {
    modelType,
    hiddenSize: v.hidden_size ?? d.hidden_size,
    intermediateSize: v.intermediate_size ?? d.intermediate_size,
    numHiddenLayers: v.num_hidden_layers ?? d.num_hidden_layers,
    numAttentionHeads: v.num_attention_heads ?? d.num_attention_heads,
    numChannels: v.num_channels ?? d.num_channels,
    imageSize: v.image_size ?? d.image_size,
    patchSize: v.patch_size ?? d.patch_size,
    hiddenAct,
    layerNormEps: v.layer_norm_eps ?? d.layer_norm_eps,
  };
  if (config.hiddenSize % config.numAttentionHeads !== 0) {
    throw new UserError(
      `${source}: vision_config.hidden_size ${config.hiddenSize} is not a multiple of num_attention_heads ${config.numAttentionHeads}`,
    );
  }
  if (config.imageSize % config.patchSize !== 0) {
    throw new UserError(
      `${source}: vision_config.image_size ${config.imageSize} is not a multiple of patch_size ${config.patchSize}`,
    );
  }
  if (config.numChannels !== 3)
    throw new UserError(`${source}: vision_config.num_channels ${config.numChannels} is not supported (RGB images: 3)`);
  return config;
}

/** Patches per side of a full image: the vision tower's position grid. */
export function patchesPerSide(config: VisionConfig): number {
  return config.imageSize / config.patchSize;
}

/** Idefics3 (SmolVLM): the vision tower, the pixel-shuffle factor and the id of `<image>`. */
export interface Idefics3VisionSetup {
  vision: VisionConfig;
  scaleFactor: number;
  imageTokenId: number;
}

const idefics3Schema = z.object({
  vision_config: z.unknown().optional(),
  scale_factor: positiveInt.default(2),
  image_token_id: z.number().int().nonnegative().default(128257),
});

/** Read the Idefics3 vision fields of a parsed config.json. */
export function parseIdefics3VisionSetup(raw: unknown, source = 'config.json'): Idefics3VisionSetup {
  const c = parseOrFail(idefics3Schema, raw, `${source}: `);
  const vision = parseVisionConfig(c.vision_config, 'idefics3_vision', source);
  const side = patchesPerSide(vision);
  if (side % c.scale_factor !== 0)
    throw new UserError(`${source}: scale_factor ${c.scale_factor} does not divide the ${side}x${side} patch grid`);
  return { vision, scaleFactor: c.scale_factor, imageTokenId: c.image_token_id };
}

/** Image tokens one Idefics3 image becomes: (patches per side / scale_factor)^2. */
export function idefics3ImageSeqLen(setup: Idefics3VisionSetup): number {
  return (patchesPerSide(setup.vision) / setup.scaleFactor) ** 2;
}

/** Gemma 3: the SigLIP tower, tokens per image after pooling, and the image / begin-of-image / end-of-image ids. */
export interface Gemma3VisionSetup {
  vision: VisionConfig;
  mmTokensPerImage: number;
  imageTokenId: number;
  boiTokenId: number;
  eoiTokenId: number;
}

const gemma3Schema = z.object({
  vision_config: z.unknown().optional(),
  mm_tokens_per_image: positiveInt.default(256),
  image_token_index: z.number().int().nonnegative().default(262_144),
  boi_token_index: z.number().int().nonnegative().default(255_999),
  eoi_token_index: z.number().int().nonnegative().default(256_000),
});

/** Read the Gemma 3 vision fields of a parsed config.json (`image_token_index` is the key on disk). */
export function parseGemma3VisionSetup(raw: unknown, source = 'config.json'): Gemma3VisionSetup {
  const c = parseOrFail(gemma3Schema, raw, `${source}: `);
  const vision = parseVisionConfig(c.vision_config, 'siglip_vision_model', source);
  const side = patchesPerSide(vision);
  const perSide = Math.round(Math.sqrt(c.mm_tokens_per_image));
  if (perSide * perSide !== c.mm_tokens_per_image || side % perSide !== 0) {
    throw new UserError(
      `${source}: mm_tokens_per_image ${c.mm_tokens_per_image} is not a square whose side divides the ${side}x${side} patch grid`,
    );
  }
  return {
    vision,
    mmTokensPerImage: c.mm_tokens_per_image,
    imageTokenId: c.image_token_index,
    boiTokenId: c.boi_token_index,
    eoiTokenId: c.eoi_token_index,
  };
}
