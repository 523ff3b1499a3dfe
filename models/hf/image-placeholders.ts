// Image placeholders of a rendered chat prompt, expanded into the run of image tokens the architecture's vision
// features fill, as transformers' processors do before tokenising. The chat template writes one
// placeholder per image; the processor replaces each occurrence with the full sequence:
//   Idefics3 / SmolVLM (Idefics3Processor, no image splitting): "<image>" ->
//     "<fake_token_around_image><global-img>" + "<image>" x image_seq_len + "<fake_token_around_image>",
//     image_seq_len = (image_size / patch_size)^2 / scale_factor^2 (the pixel shuffle's output length);
//   Gemma 3 (Gemma3Processor): "<start_of_image>" ->
//     "\n\n<start_of_image>" + "<image_soft_token>" x mm_tokens_per_image + "<end_of_image>\n\n".
// Token texts come from the tokenizer through the ids in config.json (image_token_id; boi/eoi/image_token_index), not
// from a table here; the Idefics3 processor's own strings (<fake_token_around_image>, <global-img>) must be tokens of
// the tokenizer. Config values absent from config.json take transformers' class defaults (save_pretrained omits them).
import { z } from 'zod';
import { UserError, describeZodError } from '../../core/errors.ts';
import type { HfTokenizer } from './tokenizer.ts';

/** What a chat template writes per image, what that becomes, and which token the image features replace. */
export interface ImagePlaceholderLayout {
  modelType: string;
  /** The text the chat template writes for one image. */
  placeholder: string;
  /** The text each placeholder is replaced by. */
  expansion: string;
  /** The token whose positions receive the image features, and how many per image. */
  imageToken: string;
  imageTokenId: number;
  tokensPerImage: number;
}

/** Idefics3Processor's fixed strings around an image (transformers 4.57, processing_idefics3.py). */
const IDEFICS3_FAKE_TOKEN = '<fake_token_around_image>';
const IDEFICS3_GLOBAL_IMAGE_TOKEN = '<global-img>';

const idefics3ConfigSchema = z
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

const gemma3ConfigSchema = z
  .object({
    mm_tokens_per_image: z.number().int().positive().default(256),
    boi_token_index: z.number().int().nonnegative().default(255999),
    eoi_token_index: z.number().int().nonnegative().default(256000),
    image_token_index: z.number().int().nonnegative().default(262144),
  })
  .loose();

const modelTypeSchema = z.object({ model_type: z.string() }).loose();

function parseConfig<T>(schema: z.ZodType<T>, config: unknown, file: string): T {
  const result = schema.safeParse(config);
  if (result.success) return result.data;
  throw new UserError(describeZodError(result.error, `${file}: `, config));
}

function tokenOf(tokenizer: HfTokenizer, id: number, key: string, file: string): string {
  const token = tokenizer.idToToken(id);
  if (token === undefined) throw new UserError(`${file}: ${key} ${id} is not a token of the checkpoint's tokenizer`);
  return token;
}

function idOf(tokenizer: HfTokenizer, token: string, file: string): number {
  const id = tokenizer.tokenToId(token);
  if (id === undefined)
    throw new UserError(`${file}: the tokenizer has no ${token} token, which the image prompt layout needs`);
  return id;
}

function idefics3Layout(config: unknown, file: string, tokenizer: HfTokenizer): ImagePlaceholderLayout {
  const c = parseConfig(idefics3ConfigSchema, config, file);
  const side = c.vision_config.image_size / c.vision_config.patch_size;
  const tokensPerImage = (side * side) / (c.scale_factor * c.scale_factor);
  if (!Number.isInteger(side) || !Number.isInteger(tokensPerImage)) {
    throw new UserError(
      `${file}: vision_config image_size ${c.vision_config.image_size} / patch_size ${c.vision_config.patch_size} does not pixel-shuffle by scale_factor ${c.scale_factor}`,
    );
  }
  const imageToken = tokenOf(tokenizer, c.image_token_id, 'image_token_id', file);
  idOf(tokenizer, IDEFICS3_FAKE_TOKEN, file);
  idOf(tokenizer, IDEFICS3_GLOBAL_IMAGE_TOKEN, file);
  return {
    modelType: 'idefics3',
    placeholder: imageToken,
    expansion:
      IDEFICS3_FAKE_TOKEN + IDEFICS3_GLOBAL_IMAGE_TOKEN + imageToken.repeat(tokensPerImage) + IDEFICS3_FAKE_TOKEN,
    imageToken,
    imageTokenId: c.image_token_id,
    tokensPerImage,
  };
}

function gemma3Layout(config: unknown, file: string, tokenizer: HfTokenizer): ImagePlaceholderLayout {
  const c = parseConfig(gemma3ConfigSchema, config, file);
  const boi = tokenOf(tokenizer, c.boi_token_index, 'boi_token_index', file);
  const eoi = tokenOf(tokenizer, c.eoi_token_index, 'eoi_token_index', file);
  const imageToken = tokenOf(tokenizer, c.image_token_index, 'image_token_index', file);
  return {
    modelType: 'gemma3',
    placeholder: boi,
    expansion: `\n\n${boi}${imageToken.repeat(c.mm_tokens_per_image)}${eoi}\n\n`,
    imageToken,
    imageTokenId: c.image_token_index,
    tokensPerImage: c.mm_tokens_per_image,
  };
}

/** Layouts by config.json model_type. SmolVLM-256M/500M say "idefics3"; later SmolVLM folders say "smolvlm". */
const LAYOUTS: Record<string, (config: unknown, file: string, tokenizer: HfTokenizer) => ImagePlaceholderLayout> = {
  idefics3: idefics3Layout,
  smolvlm: idefics3Layout,
  gemma3: gemma3Layout,
};

/**
 * The image placeholder layout of a checkpoint from its parsed config.json (`file` names it in errors), or null for
 * an architecture that reads no images (llama, qwen2, gemma3_text).
 */
export function imagePlaceholderLayout(
  config: unknown,
  file: string,
  tokenizer: HfTokenizer,
): ImagePlaceholderLayout | null {
  const { model_type } = parseConfig(modelTypeSchema, config, file);
  const layout = LAYOUTS[model_type];
  return layout ? layout(config, file, tokenizer) : null;
}

/** How many image placeholders a rendered prompt holds. */
export function countImagePlaceholders(prompt: string, layout: ImagePlaceholderLayout): number {
  return prompt.split(layout.placeholder).length - 1;
}

/**
 * Replace every placeholder of a rendered prompt with the image token run. `imageCount` is the number of images
 * that go with the prompt; a template that wrote a different number of placeholders is a UserError.
 */
export function expandImagePlaceholders(prompt: string, layout: ImagePlaceholderLayout, imageCount: number): string {
  const pieces = prompt.split(layout.placeholder);
  if (pieces.length - 1 !== imageCount) {
    throw new UserError(
      `the chat template wrote ${pieces.length - 1} image placeholder(s) ${JSON.stringify(layout.placeholder)} for ${imageCount} image(s)`,
    );
  }
  return pieces.join(layout.expansion);
}
