// The built-in model's own compact prompt layout (chat models keep the reference wording from envs/*). An episode
// becomes:
//
//   <domain>\n<initial state>\n<action 1>\n … <action T>\n[<question>\n]FINAL ANSWER: 
//
// where an image action is its patch tokens in place of the text. The model then writes the answer and EOS. The
// prompt ends with the reference answer marker, so the text to score is that marker plus the completion
// (responseForScoring), which every environment's reference parser accepts.
import sharp from 'sharp';
import type { Episode, RawImage } from '../envs/types.ts';
import type { ChatMessage } from '../core/chat.ts';
import { UserError } from '../core/errors.ts';
import type { ModelInput, ModelInputPart } from './types.ts';

export const ANSWER_CUE = 'FINAL ANSWER: ';

/** Renders action `index` of an episode at the model's image size (an Env's renderAction with imageSizes.model). */
export type RenderImage = (episode: Episode, index: number) => RawImage;

/** Append a part, merging adjacent text. */
function push(parts: ModelInputPart[], part: ModelInputPart): void {
  const last = parts[parts.length - 1];
  if (part.type === 'text' && last?.type === 'text') last.text += part.text;
  else parts.push(part.type === 'text' ? { type: 'text', text: part.text } : part);
}

export function episodeToModelInput(episode: Episode, renderImage: RenderImage): ModelInput {
  const parts: ModelInputPart[] = [];
  push(parts, { type: 'text', text: `${episode.domain}\n${episode.initialState}\n` });
  episode.actions.forEach((action, i) => {
    if (action.modality === 'image') push(parts, { type: 'image', image: renderImage(episode, i) });
    else push(parts, { type: 'text', text: action.text });
    push(parts, { type: 'text', text: '\n' });
  });
  if (episode.question !== undefined) push(parts, { type: 'text', text: `${episode.question}\n` });
  push(parts, { type: 'text', text: ANSWER_CUE });
  return parts;
}

/** The perception probe in the same layout: one image action, answered with its text form. */
export function perceptionToModelInput(domain: string, image: RawImage): ModelInput {
  return [{ type: 'text', text: `${domain}\nread\n` }, { type: 'image', image }, { type: 'text', text: `\n${ANSWER_CUE}` }];
}

/** What supervised training asks the model to write after the cue (EOS is added by the policy's encodeTarget). */
export function targetText(episode: Episode): string {
  return episode.target;
}

/** The response a reward function scores: the prompt's answer marker followed by the completion. */
export function responseForScoring(completionText: string): string {
  return ANSWER_CUE + completionText;
}

/** Decode a data: URL image (PNG, JPEG, WebP…) to RGB at size × size. */
export async function decodeDataUrlImage(url: string, size: number): Promise<RawImage> {
  const match = /^data:image\/[a-z+.-]+;base64,(.*)$/is.exec(url);
  if (!match) throw new UserError(`image_url must be a base64 data: URL (got ${url.slice(0, 40)}…)`);
  let decoded: { data: Buffer; info: { width: number; height: number } };
  try {
    decoded = await sharp(Buffer.from(match[1], 'base64'))
      .removeAlpha()
      .resize(size, size, { fit: 'fill' })
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw new UserError(`image_url could not be decoded as an image (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`);
  }
  const { data, info } = decoded;
  return { width: info.width, height: info.height, channels: 3, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/**
 * Reduce OpenAI-format chat messages to a ModelInput for the built-in model (`metrl serve`): message texts joined
 * by newlines, images decoded from data URLs and resized to imageSize × imageSize. With `answerCue` the input ends
 * with the answer marker, as the model's own template does.
 */
export async function chatToModelInput(messages: ChatMessage[], options: { imageSize?: number; answerCue?: boolean } = {}): Promise<ModelInput> {
  const size = options.imageSize ?? 64;
  const ordered: ({ type: 'text'; text: string } | { type: 'image'; url: string })[] = [];
  messages.forEach((m, i) => {
    if (i > 0) ordered.push({ type: 'text', text: '\n' });
    if (typeof m.content === 'string') ordered.push({ type: 'text', text: m.content });
    else for (const c of m.content) ordered.push(c.type === 'text' ? { type: 'text', text: c.text } : { type: 'image', url: c.image_url.url });
  });
  const out: ModelInputPart[] = [];
  for (const p of ordered) {
    if (p.type === 'text') push(out, p);
    else push(out, { type: 'image', image: await decodeDataUrlImage(p.url, size) });
  }
  if (options.answerCue && !(out[out.length - 1]?.type === 'text' && (out[out.length - 1] as { text: string }).text.endsWith(ANSWER_CUE))) {
    push(out, { type: 'text', text: ANSWER_CUE });
  }
  return out;
}
