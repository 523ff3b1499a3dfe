// A prompt and a completion reduced to what must be the same on both sides of a training step: the sampler that drew
// the completion and the learner that scores it. Images that never reach the learner, image-token counts that differ
// between a rollout engine and the trainer, completions that are not the ones sampled: each changes a print while the
// loss still falls, so the trainer compares the prints every step (trainer/grpo/integrity.ts).
import { createHash } from 'node:crypto';

export interface PromptPrint {
  /** Prompt length in tokens. */
  tokens: number;
  /** Positions holding the model's image token; null when the sampler does not name its image token. */
  imageTokens: number | null;
  images: number;
  /** sha256 (first 16 hex digits) of the token ids, and of every image's pixel values with its length. */
  tokensHash: string;
  pixelsHash: string;
}

const hex = (hash: ReturnType<typeof createHash>) => hash.digest('hex').slice(0, 16);

/** sha256 of token ids as 32-bit integers. */
export function tokensHash(tokens: readonly number[]): string {
  return hex(createHash('sha256').update(new Uint8Array(Int32Array.from(tokens).buffer)));
}

/** The print of an EncodedPrompt (models/types.ts): its token ids and its images' pixel values. */
export function promptPrint(
  prompt: { tokens: readonly number[]; images: readonly Float32Array[] },
  imageTokenId: number | undefined,
): PromptPrint {
  const pixels = createHash('sha256');
  for (const image of prompt.images) {
    pixels.update(`${image.length};`);
    pixels.update(new Uint8Array(image.buffer, image.byteOffset, image.byteLength));
  }
  return {
    tokens: prompt.tokens.length,
    imageTokens: imageTokenId === undefined ? null : prompt.tokens.filter((t) => t === imageTokenId).length,
    images: prompt.images.length,
    tokensHash: tokensHash(prompt.tokens),
    pixelsHash: hex(pixels),
  };
}
