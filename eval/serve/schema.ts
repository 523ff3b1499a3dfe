// The request side of the OpenAI chat-completions API that `metrl serve` accepts, as zod schemas: messages whose
// content is a string or a list of text and image_url parts (images as data URLs: the server never fetches URLs),
// and the sampling fields temperature, top_p, max_tokens, n, seed, plus vLLM's top_k, min_p, logprobs and return_token_ids. Fields we do not use (presence_penalty, user, …)
// are accepted and ignored, as OpenAI clients send them; streaming is refused with a clear 400.
import { z } from 'zod';

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const imagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.union([z.object({ url: z.string(), detail: z.string().optional() }), z.string()]),
});
const contentPartSchema = z.discriminatedUnion('type', [textPart, imagePart]);

const messageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z
    .union([z.string(), z.array(contentPartSchema)], {
      error: 'must be a string or a list of parts of type text or image_url',
    })
    .nullable(),
});

export const MAX_N = 16;

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
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  // vLLM's fields for rollouts (chat-token-ids.ts): the sampled tokens' log-probs, and the prompt's and choices' token ids.
  logprobs: z.boolean().nullish(),
  top_logprobs: z
    .number()
    .int()
    .min(0)
    .max(0, "metrl serve returns the sampled token's log-prob only (top_logprobs: 0)")
    .nullish(),
  return_token_ids: z.boolean().nullish(),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** A base64 image data URL (`data:image/png;base64,…`, also jpeg, webp, gif). */
export function isImageDataUrl(url: string): boolean {
  return /^data:image\/(png|jpeg|jpg|webp|gif);base64,[A-Za-z0-9+/=\s]+$/.test(url);
}
