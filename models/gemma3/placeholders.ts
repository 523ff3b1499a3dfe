// What Gemma 3's processor writes for an image (Gemma3Processor, transformers 4.57 processing_gemma3.py): the chat
// template's "<start_of_image>" becomes
//   "\n\n<start_of_image>" + "<image_soft_token>" × mm_tokens_per_image + "<end_of_image>\n\n".
// Token texts come from the tokenizer through config.json's boi / eoi / image_token_index ids (Gemma3Config's class
// defaults when the file has none).
import { z } from 'zod';
import { parseOrFail } from '../../core/errors.ts';
import { tokenOf, type ImagePlaceholderLayout } from '../hf/image-placeholders.ts';
import type { HfTokenizer } from '../hf/tokenizer.ts';

const configSchema = z
  .object({
    mm_tokens_per_image: z.number().int().positive().default(256),
    boi_token_index: z.number().int().nonnegative().default(255999),
    eoi_token_index: z.number().int().nonnegative().default(256000),
    image_token_index: z.number().int().nonnegative().default(262144),
  })
  .loose();

/** The layout of a parsed config.json (`file` names it in errors). */
export function gemma3Placeholders(config: unknown, file: string, tokenizer: HfTokenizer): ImagePlaceholderLayout {
  const c = parseOrFail(configSchema, config, `${file}: `);
  const boi = tokenOf(tokenizer, c.boi_token_index, 'boi_token_index', file);
  const eoi = tokenOf(tokenizer, c.eoi_token_index, 'eoi_token_index', file);
  const imageToken = tokenOf(tokenizer, c.image_token_index, 'image_token_index', file);
  return {
    placeholder: boi,
    expand: (tokens) => `\n\n${boi}${imageToken.repeat(tokens)}${eoi}\n\n`,
    imageToken,
    imageTokenId: c.image_token_index,
    tokensPerImage: c.mm_tokens_per_image,
  };
}
