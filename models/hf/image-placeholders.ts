// Image placeholders of a rendered chat prompt, expanded into the run of image tokens the architecture's vision
// features fill, as transformers' processors do before tokenising. The chat template writes one placeholder per
// image; the processor replaces each occurrence with the image's sequence. Each vision-language architecture says
// what its processor writes (models/idefics3/placeholders.ts, models/gemma3/placeholders.ts); token texts come from
// the tokenizer through the ids in config.json, not from a table, and a text or id the tokenizer lacks is refused in
// one line (tokenOf, idOf).
import { UserError } from '../../core/errors.ts';
import type { HfTokenizer } from './tokenizer.ts';

/** What a chat template writes per image, what that becomes, and which token the image features replace. */
export interface ImagePlaceholderLayout {
  /** The text the chat template writes for one image. */
  placeholder: string;
  /** The text one placeholder becomes for an image of `tokens` image tokens. */
  expand(tokens: number): string;
  /** The token whose positions receive the image features. */
  imageToken: string;
  imageTokenId: number;
  /** Image tokens of every image where all have the same number (Idefics3, Gemma 3); null where each has its own. */
  tokensPerImage: number | null;
}

/** The text of token `id` (a config.json key's value), or a UserError naming the file and key. */
export function tokenOf(tokenizer: HfTokenizer, id: number, key: string, file: string): string {
  const token = tokenizer.idToToken(id);
  if (token === undefined) throw new UserError(`${file}: ${key} ${id} is not a token of the checkpoint's tokenizer`);
  return token;
}

/** The id of a text the processor writes, or a UserError saying the tokenizer lacks it. */
export function idOf(tokenizer: HfTokenizer, token: string, file: string): number {
  const id = tokenizer.tokenToId(token);
  if (id === undefined)
    throw new UserError(`${file}: the tokenizer has no ${token} token, which the image prompt layout needs`);
  return id;
}

/** How many image placeholders a rendered prompt holds. */
export function countImagePlaceholders(prompt: string, layout: ImagePlaceholderLayout): number {
  return prompt.split(layout.placeholder).length - 1;
}

/**
 * Replace every placeholder of a rendered prompt with its image's token run. `images`: the image tokens of each image
 * that goes with the prompt, in order, or their number when every image has the layout's tokensPerImage. A template
 * that wrote a different number of placeholders is a UserError.
 */
export function expandImagePlaceholders(
  prompt: string,
  layout: ImagePlaceholderLayout,
  images: number | readonly number[],
): string {
  const pieces = prompt.split(layout.placeholder);
  if (typeof images === 'number' && layout.tokensPerImage === null)
    throw new Error("internal: this layout needs each image's token count");
  const tokens = typeof images === 'number' ? new Array<number>(images).fill(layout.tokensPerImage ?? 0) : images;
  if (pieces.length - 1 !== tokens.length) {
    throw new UserError(
      `the chat template wrote ${pieces.length - 1} image placeholder(s) ${JSON.stringify(layout.placeholder)} for ${tokens.length} image(s)`,
    );
  }
  return pieces.map((piece, i) => (i === 0 ? piece : layout.expand(tokens[i - 1]) + piece)).join('');
}
