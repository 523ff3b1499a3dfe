// What Idefics3's (SmolVLM's) processor writes for an image, without image splitting (Idefics3Processor, transformers
// 4.57 processing_idefics3.py): the chat template's "<image>" becomes
//   "<fake_token_around_image><global-img>" + "<image>" × image_seq_len + "<fake_token_around_image>",
// image_seq_len = (image_size / patch_size)² / scale_factor² (the pixel shuffle's output length). The processor's own
// strings must be tokens of the checkpoint's tokenizer; config values absent from config.json take Idefics3Config's
// class defaults.
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import { idOf, tokenOf, type ImagePlaceholderLayout } from '../hf/image-placeholders.ts';
import type { HfTokenizer } from '../hf/tokenizer.ts';

const FAKE_TOKEN = '<fake_token_around_image>';
const GLOBAL_IMAGE_TOKEN = '<global-img>';

const configSchema = z
  .object({
    image_token_id: z.number().int().nonnegative().default(128257),
    scale_factor: z.number().int().positive().default(2),
    vision_config: z
      .object({
        image_size: z.number().int().positive().default(224),
        patch_size: z.number().int().positive().default(32),
      })
      .loose()
      .default({ image_size: 224, patch_size: 32 }),
  })
  .loose();

/** The layout of a parsed config.json (`file` names it in errors). */
export function idefics3Placeholders(config: unknown, file: string, tokenizer: HfTokenizer): ImagePlaceholderLayout {
  const c = parseOrFail(configSchema, config, `${file}: `);
  const side = c.vision_config.image_size / c.vision_config.patch_size;
  const tokensPerImage = (side * side) / (c.scale_factor * c.scale_factor);
  if (!Number.isInteger(side) || !Number.isInteger(tokensPerImage)) {
    throw new UserError(
      `${file}: vision_config image_size ${c.vision_config.image_size} / patch_size ${c.vision_config.patch_size} does not pixel-shuffle by scale_factor ${c.scale_factor}`,
    );
  }
  const imageToken = tokenOf(tokenizer, c.image_token_id, 'image_token_id', file);
  idOf(tokenizer, FAKE_TOKEN, file);
  idOf(tokenizer, GLOBAL_IMAGE_TOKEN, file);
  return {
    placeholder: imageToken,
    expand: (tokens) => FAKE_TOKEN + GLOBAL_IMAGE_TOKEN + imageToken.repeat(tokens) + FAKE_TOKEN,
    imageToken,
    imageTokenId: c.image_token_id,
    tokensPerImage,
  };
}
