// Gemma 3's vision fields of config.json: the SigLIP vision_config (models/vision/vision-config.ts), the tokens each
// image becomes after the projector's pooling, and the image / begin-of-image / end-of-image token ids. Missing keys
// take Gemma3Config's class defaults (transformers 4.57).
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import { parseVisionConfig, patchesPerSide, type VisionConfig } from '../vision/vision-config.ts';

const positiveInt = z.number().int().positive();

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
