// What a Qwen-VL chat template writes for an image and what Qwen2VLProcessor makes of it: the template writes
// `<|vision_start|><|image_pad|><|vision_end|>`, and the processor repeats the pad to the image's token count
// (grid_t · grid_h · grid_w / merge²), so each image has its own. Token texts come from the tokenizer through
// config.json's ids.
import type { HfTokenizer } from '../hf/tokenizer.ts';
import { tokenOf, type ImagePlaceholderLayout } from '../hf/image-placeholders.ts';
import type { QwenVlSetup } from './config.ts';

export function qwenVlPlaceholders(
  setup: QwenVlSetup<unknown>,
  file: string,
  tokenizer: HfTokenizer,
): ImagePlaceholderLayout {
  const start = tokenOf(tokenizer, setup.visionStartTokenId, 'vision_start_token_id', file);
  const end = tokenOf(tokenizer, setup.visionEndTokenId, 'vision_end_token_id', file);
  const pad = tokenOf(tokenizer, setup.imageTokenId, 'image_token_id', file);
  return {
    placeholder: `${start}${pad}${end}`,
    expand: (tokens) => `${start}${pad.repeat(tokens)}${end}`,
    imageToken: pad,
    imageTokenId: setup.imageTokenId,
    tokensPerImage: null,
  };
}
