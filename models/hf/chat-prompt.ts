// A metrl prompt as a Hugging Face checkpoint reads it: structured messages -> the checkpoint's chat
// template -> image placeholders expanded -> token ids, plus the images in placeholder order for the architecture's
// image processor. This is the whole text side of transformers' processor.apply_chat_template(tokenize=True) for the
// architectures metrl supports; each step lives in its own file (chat-messages, chat-template, image-placeholders,
// tokenizer) and this one only chains them. A template that renders nothing is refused in one line.
import type { ImageRef, PromptMessage } from '../../core/episode.ts';
import type { RawImage } from '../../core/image.ts';
import { UserError } from '../../core/errors.ts';
import { toTemplatePrompt } from './chat-messages.ts';
import { loadChatTemplate, type ChatTemplate } from './chat-template.ts';
import { expandImagePlaceholders, type ImagePlaceholderLayout } from './image-placeholders.ts';
import { loadHfTokenizer, type HfTokenizer } from './tokenizer.ts';

/** What a checkpoint folder brings to prompt building. `layout` is null for text-only architectures. */
export interface ChatPromptKit {
  tokenizer: HfTokenizer;
  template: ChatTemplate;
  layout: ImagePlaceholderLayout | null;
}

export interface EncodedChatPrompt {
  /** The rendered prompt with image placeholders expanded (what was tokenised). */
  text: string;
  /** Its token ids; nothing added beyond what the template wrote. */
  ids: number[];
  /** One image per placeholder, in order; empty for text prompts. */
  images: RawImage[];
}

/**
 * The tokenizer, chat template and image layout of a checkpoint folder. `layout` reads the image placeholder layout
 * with the tokenizer (the architecture's, models/hf/architecture.ts); absent for text-only architectures.
 */
export function loadChatPromptKit(
  dir: string,
  layout?: (tokenizer: HfTokenizer) => ImagePlaceholderLayout,
): ChatPromptKit {
  const tokenizer = loadHfTokenizer(dir);
  return { tokenizer, template: loadChatTemplate(dir, tokenizer), layout: layout?.(tokenizer) ?? null };
}

/**
 * Encode a structured prompt for generation. Image models get list content (what their templates iterate over);
 * text-only models get plain-string content and refuse images. The text is tokenised without added special tokens,
 * as transformers does after apply_chat_template: the template already wrote BOS where the model wants one.
 */
export function encodeChatPrompt(
  kit: ChatPromptKit,
  prompt: PromptMessage[],
  render: (ref: ImageRef) => RawImage,
  options: { addGenerationPrompt?: boolean } = {},
): EncodedChatPrompt {
  const { messages, images } = toTemplatePrompt(prompt, render, { content: kit.layout ? 'parts' : 'string' });
  const rendered = kit.template.render(messages, { addGenerationPrompt: options.addGenerationPrompt ?? true });
  // One image-token run per image, as many tokens as the layout gives every image.
  const text = kit.layout ? expandImagePlaceholders(rendered, kit.layout, images.length) : rendered;
  const ids = kit.tokenizer.encode(text, { addSpecialTokens: false });
  // Nothing to generate after: refused here, in one line, before any engine is handed zero tokens.
  if (ids.length === 0)
    throw new UserError(
      `${kit.template.file}: the chat template rendered an empty prompt (no tokens to generate after)`,
    );
  return { text, ids, images };
}
