// metrl's structured prompt (core/episode.ts PromptMessage[]: text parts and references to an episode's action
// images) as the messages a checkpoint's chat template reads, plus the images in the order the template's
// placeholders will appear. The wording is the one hosted models get: the messages go through
// core/chat.ts toChatMessages, the same conversion eval/query-to-chat.ts uses for API requests (adjacent text parts merged,
// roles kept), and each image_url part becomes {type: 'image'}. Images are rendered by the caller's function; the
// hosted path renders them at the environment's chat size (envRenderer), and the model's processor resizes them.
// OpenAI-format messages (what `metrl serve` receives, or eval/query-to-chat.ts queryToChat builds) convert the same way,
// their data-URL images decoded at full size (chatToTemplatePrompt).
import { pngDataUrl, toChatMessages, type ChatMessage } from '../../core/chat.ts';
import { UserError } from '../../core/errors.ts';
import type { ImageRef, PromptMessage } from '../../core/episode.ts';
import { decodePng, encodePng, type RawImage } from '../../core/image.ts';
import type { Env } from '../../envs/env.ts';
import type { ChatTemplateMessage, ChatTemplatePart } from './chat-template.ts';

/** Messages for a chat template and the images its placeholders stand for, in order. */
export interface TemplatePrompt {
  messages: ChatTemplateMessage[];
  images: RawImage[];
}

export interface TemplateMessageOptions {
  /**
   * 'parts': every message's content is a list of parts, as multimodal templates expect (SmolVLM's template reads
   * content[0].type and drops plain strings). 'string': text-only content as a plain string, as text-only templates
   * (Llama, Qwen2) expect; a prompt with an image is then a UserError, since such a model cannot see it.
   */
  content: 'parts' | 'string';
}

/** Render images of an environment's episodes the way the hosted-model path does (its chat image size by default). */
export function envRenderer(
  env: Pick<Env, 'renderAction' | 'imageSizes'>,
  size = env.imageSizes.chat,
): (ref: ImageRef) => RawImage {
  return (ref) => env.renderAction(ref.episode, ref.index, size);
}

/**
 * Turn a structured prompt into chat-template messages and the ordered images. Each image occurrence gets its own
 * entry in `images` (a reference shown twice is rendered once and listed twice), matching one placeholder each.
 */
export function toTemplatePrompt(
  prompt: PromptMessage[],
  render: (ref: ImageRef) => RawImage,
  options: TemplateMessageOptions,
): TemplatePrompt {
  const rendered = new Map<string, RawImage>();
  const images: RawImage[] = [];
  // toChatMessages asks for one URL per image part; the "URL" here is the image's index in `images`, so the order
  // of the list follows the parts whatever order they are visited in.
  const chat = toChatMessages(prompt, (ref) => {
    const key = `${ref.episode.id}#${ref.index}`;
    let image = rendered.get(key);
    if (!image) {
      image = render(ref);
      rendered.set(key, image);
    }
    images.push(image);
    return String(images.length - 1);
  });
  return fromChatMessages(chat, (url) => images[Number(url)], options);
}

/**
 * A structured prompt as OpenAI-format messages with each image rendered once and inlined as a PNG data URL: what a
 * server that applies the chat template itself receives (models/remote/); chatToTemplatePrompt reads them back to
 * the same template messages and images that toTemplatePrompt gives.
 */
export async function chatMessagesWithImages(
  prompt: PromptMessage[],
  render: (ref: ImageRef) => RawImage,
): Promise<ChatMessage[]> {
  const urls = new Map<string, string>();
  for (const m of prompt) {
    for (const p of m.parts) {
      if (p.type === 'text') continue;
      const key = `${p.ref.episode.id}#${p.ref.index}`;
      if (!urls.has(key)) urls.set(key, pngDataUrl(await encodePng(render(p.ref))));
    }
  }
  return toChatMessages(prompt, (ref) => urls.get(`${ref.episode.id}#${ref.index}`)!);
}

/** Chat messages to template messages, each image_url part resolved through `image`, in order of appearance. */
function fromChatMessages(
  chat: ChatMessage[],
  image: (url: string) => RawImage,
  options: TemplateMessageOptions,
): TemplatePrompt {
  const images: RawImage[] = [];
  const messages = chat.map((m): ChatTemplateMessage => {
    if (typeof m.content === 'string') {
      return { role: m.role, content: options.content === 'parts' ? [{ type: 'text', text: m.content }] : m.content };
    }
    if (options.content === 'string' && m.content.some((p) => p.type === 'image_url')) {
      throw new UserError(
        `this checkpoint's model reads text only, but the prompt shows images (use the text modality)`,
      );
    }
    if (options.content === 'string')
      return { role: m.role, content: m.content.map((p) => (p as { text: string }).text).join('') };
    const parts = m.content.map((p): ChatTemplatePart => {
      if (p.type === 'text') return { type: 'text', text: p.text };
      images.push(image(p.image_url.url));
      return { type: 'image' };
    });
    return { role: m.role, content: parts };
  });
  return { messages, images };
}

/** A base64 data URL's image (PNG, JPEG, WebP…) at its own size. */
async function decodeDataUrl(url: string): Promise<RawImage> {
  const match = /^data:image\/[a-z+.-]+;base64,(.*)$/is.exec(url);
  if (!match) throw new UserError(`image_url must be a base64 data: URL (got ${url.slice(0, 40)}…)`);
  try {
    return await decodePng(Buffer.from(match[1], 'base64'));
  } catch (error) {
    throw new UserError(`image_url could not be decoded as an image (${(error as Error).message.split('\n')[0]})`);
  }
}

/**
 * OpenAI-format chat messages (core/chat.ts; images as data URLs) as chat-template messages and decoded images: for
 * `metrl serve`, and for evaluating in process on exactly the messages eval/query-to-chat.ts builds for hosted models.
 */
export async function chatToTemplatePrompt(
  chat: ChatMessage[],
  options: TemplateMessageOptions,
): Promise<TemplatePrompt> {
  const decoded = new Map<string, RawImage>();
  for (const m of chat) {
    if (typeof m.content === 'string') continue;
    for (const p of m.content) {
      if (p.type === 'image_url' && !decoded.has(p.image_url.url))
        decoded.set(p.image_url.url, await decodeDataUrl(p.image_url.url));
    }
  }
  return fromChatMessages(chat, (url) => decoded.get(url)!, options);
}
