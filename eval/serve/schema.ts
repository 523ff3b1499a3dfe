// The request side of the OpenAI chat-completions API that `metrl serve` accepts, as zod schemas: messages whose
// content is a string or a list of text and image_url parts (images as data URLs: the server never fetches URLs), in
// the roles system, developer (OpenAI's newer name for system: read as one), user and assistant; the sampling fields
// temperature, top_p, max_tokens (or max_completion_tokens), n, seed and stop (a string or up to four), vLLM's top_k
// and min_p; stream and stream_options.include_usage; logprobs with top_logprobs up to 20, and vLLM's return_token_ids. `model` is any
// string or absent: one model is served, and answers name it (server.ts). Fields we do not use (presence_penalty,
// user, …) are accepted and ignored, as OpenAI clients send them.
import { z } from 'zod';

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const imagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.union([z.object({ url: z.string(), detail: z.string().optional() }), z.string()]),
});
const contentPartSchema = z.discriminatedUnion('type', [textPart, imagePart]);

const messageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z
    .union([z.string(), z.array(contentPartSchema)], {
      error: 'must be a string or a list of parts of type text or image_url',
    })
    .nullable(),
});

export const MAX_N = 16;
/** OpenAI's bound on top_logprobs. */
export const MAX_TOP_LOGPROBS = 20;
/** OpenAI's bound on stop strings. */
const MAX_STOP = 4;

/** `stop`: one string or up to four, none empty. */
export const stopSchema = z
  .union([
    z.string().min(1, 'a stop string cannot be empty'),
    z.array(z.string().min(1, 'a stop string cannot be empty')).max(MAX_STOP, `at most ${MAX_STOP} stop strings`),
  ])
  .nullish();

export const chatRequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(messageSchema).min(1, 'messages must hold at least one message'),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  // vLLM's truncations: top_k (-1 or 0 = off) and min_p (0 = off).
  top_k: z.number().int().min(-1).nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  n: z.number().int().min(1).max(MAX_N).nullish(),
  seed: z.number().int().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  stop: stopSchema,
  // The sampled tokens' log-probs (with the most likely tokens at each draw), and vLLM's prompt and choice token ids
  // (chat-token-ids.ts).
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(MAX_TOP_LOGPROBS).nullish(),
  return_token_ids: z.boolean().nullish(),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** A base64 image data URL (`data:image/png;base64,…`, also jpeg, webp, gif). */
export function isImageDataUrl(url: string): boolean {
  return /^data:image\/(png|jpeg|jpg|webp|gif);base64,[A-Za-z0-9+/=\s]+$/.test(url);
}
