// Idefics3's (SmolVLM's) vision fields of config.json: the SigLIP-family vision_config (models/vision/vision-config.ts)
// and what connects the tower to the language model, the pixel-shuffle scale_factor and the id of `<image>`. Missing
// keys take Idefics3Config's class defaults (transformers 4.57).
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import { parseVisionConfig, patchesPerSide, type VisionConfig } from '../vision/vision-config.ts';

const positiveInt = z.number().int().positive();

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
