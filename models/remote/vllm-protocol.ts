// vLLM's OpenAI-compatible dialect as a rollout client speaks it. The request and response shapes are
// vLLM's documented ones, kept as fixtures in tests/fixtures/rollout/ so this file reads exactly those fields:
//   POST /v1/completions {model, prompt: [token ids], n, temperature, top_p, max_tokens, seed, logprobs: 0,
//                         return_token_ids: true}
//     → choices[i].token_ids, choices[i].logprobs.token_logprobs, choices[i].text, choices[i].finish_reason
//   POST /v1/chat/completions {model, messages (images as image_url parts with data: URLs), n, temperature, top_p,
//                         max_tokens, seed, logprobs: true, return_token_ids: true}   (image prompts)
//     → prompt_token_ids (top level: the prompt as the server's chat template and processor tokenised it),
//       choices[i].token_ids, choices[i].logprobs.content[j].logprob, choices[i].message.content, finish_reason
//   POST /v1/load_lora_adapter {lora_name, lora_path, load_inplace: true}   (vLLM --enable-lora with
//                         VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; requests then name the adapter as `model`)
// vLLM's token_ids end with EOS when the model stopped by itself (finish_reason "stop"), as metrl's Completion does.
import { z } from 'zod';
import type { ChatMessage } from '../../core/chat.ts';
import type { Completion, SamplingOptions } from '../types.ts';

export const VLLM_ADAPTER_NAME = 'metrl-policy';

/** vLLM's top_k and min_p, sent only when they are on (a request without them is the one the fixtures hold). */
export function truncation(options: SamplingOptions): { top_k?: number; min_p?: number } {
  return {
    ...(options.topK ? { top_k: options.topK } : {}),
    ...(options.minP ? { min_p: options.minP } : {}),
  };
}

export function vllmCompletionRequest(
  model: string,
  promptTokens: number[],
  group: number,
  options: SamplingOptions,
  seed: number,
): object {
  return {
    model,
    prompt: promptTokens,
    n: group,
    temperature: options.temperature,
    top_p: options.topP,
    ...truncation(options),
    max_tokens: options.maxNewTokens,
    seed,
    logprobs: 0,
    return_token_ids: true,
  };
}

const choiceSchema = z.looseObject({
  index: z.number().int(),
  text: z.string(),
  token_ids: z.array(z.number().int(), {
    error: 'no token_ids (the server must support the request field return_token_ids, which older vLLM releases lack)',
  }),
  logprobs: z.looseObject(
    { token_logprobs: z.array(z.number().nullable()) },
    { error: 'no logprobs (the request asked for logprobs: 0)' },
  ),
  finish_reason: z.string().nullable(),
});
const responseSchema = z.looseObject({ choices: z.array(choiceSchema) });

/** The group's completions from a /v1/completions answer; a string says what is wrong with it. */
export function parseVllmCompletions(json: unknown, group: number): Completion[] | string {
  const parsed = responseSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `${issue.path.join('.') || 'body'}: ${issue.message}`;
  }
  const choices = [...parsed.data.choices].sort((a, b) => a.index - b.index);
  if (choices.length !== group) return `${choices.length} choices for n = ${group}`;
  const out: Completion[] = [];
  for (const c of choices) {
    const lps = c.logprobs.token_logprobs;
    if (lps.length !== c.token_ids.length)
      return `choice ${c.index}: ${lps.length} token_logprobs for ${c.token_ids.length} token_ids`;
    if (lps.some((x) => x === null)) return `choice ${c.index}: a null token_logprob`;
    out.push({
      tokens: c.token_ids,
      text: c.text,
      logProbs: Float32Array.from(lps as number[]),
      finished: c.finish_reason === 'stop',
    });
  }
  return out;
}

export function vllmChatRequest(
  model: string,
  messages: ChatMessage[],
  group: number,
  options: SamplingOptions,
  seed: number,
): object {
  return {
    model,
    messages,
    n: group,
    temperature: options.temperature,
    top_p: options.topP,
    ...truncation(options),
    max_tokens: options.maxNewTokens,
    seed,
    logprobs: true,
    return_token_ids: true,
  };
}

const chatChoiceSchema = z.looseObject({
  index: z.number().int(),
  message: z.looseObject({ content: z.string().nullable() }),
  token_ids: z.array(z.number().int(), {
    error: 'no token_ids (the server must support the request field return_token_ids, which older vLLM releases lack)',
  }),
  logprobs: z.looseObject(
    { content: z.array(z.looseObject({ logprob: z.number().nullable() })) },
    { error: 'no logprobs.content (the request asked for logprobs: true)' },
  ),
  finish_reason: z.string().nullable(),
});
const chatResponseSchema = z.looseObject({
  prompt_token_ids: z.array(z.number().int()).nullish(),
  choices: z.array(chatChoiceSchema),
});

/** A /v1/chat/completions answer: the group's completions and the prompt's token ids as the server made them (null: not returned). */
export function parseVllmChat(
  json: unknown,
  group: number,
): { completions: Completion[]; promptTokenIds: number[] | null } | string {
  const parsed = chatResponseSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `${issue.path.join('.') || 'body'}: ${issue.message}`;
  }
  const choices = [...parsed.data.choices].sort((a, b) => a.index - b.index);
  if (choices.length !== group) return `${choices.length} choices for n = ${group}`;
  const completions: Completion[] = [];
  for (const c of choices) {
    const lps = c.logprobs.content.map((e) => e.logprob);
    if (lps.length !== c.token_ids.length)
      return `choice ${c.index}: ${lps.length} logprobs.content entries for ${c.token_ids.length} token_ids`;
    if (lps.some((x) => x === null)) return `choice ${c.index}: a null logprob`;
    completions.push({
      tokens: c.token_ids,
      text: c.message.content ?? '',
      logProbs: Float32Array.from(lps as number[]),
      finished: c.finish_reason === 'stop',
    });
  }
  return { completions, promptTokenIds: parsed.data.prompt_token_ids ?? null };
}

export function vllmLoadAdapterRequest(path: string): object {
  return { lora_name: VLLM_ADAPTER_NAME, lora_path: path, load_inplace: true };
}
