// The `vision_config` of the SigLIP-family towers (models/vision/siglip.ts): Idefics3's idefics3_vision and Gemma 3's
// siglip_vision_model. What connects a tower to its language model (Idefics3's scale_factor, Gemma 3's
// mm_tokens_per_image, the image token ids) is read by the architecture (models/idefics3/vision-config.ts,
// models/gemma3/vision-config.ts).
//
// transformers writes a sub-config without the values that equal its class's defaults, so a field missing here means
// the class default (Idefics3VisionConfig, SiglipVisionConfig of transformers 4.57), not an error.
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
