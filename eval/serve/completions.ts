// vLLM's dialect in `metrl serve`: POST /v1/completions with the prompt as token ids (one list, or a
// list of lists) or a text, `n`, `temperature`, `top_p`, `max_tokens`, `seed`, `stop`, `logprobs` (k: the sampled
// token's log-prob and the k most likely tokens' at each draw, up to 20) and
// `return_token_ids`, answered in vLLM's shape (choices[i].token_ids, choices[i].logprobs.token_logprobs,
// choices[i].prompt_token_ids; prompt k's n choices at indices k·n … k·n+n−1), and vLLM's runtime LoRA routes POST
// /v1/load_lora_adapter {lora_name, lora_path, load_inplace} and /v1/unload_lora_adapter {lora_name}, present only
// with --enable-lora (vLLM's --enable-lora with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; without it vLLM has no such
// route: 404). With these, a `metrl serve` process is a rollout server for `metrl train --rollout-server`
// (models/remote/). Answers name the model that served them: the loaded adapter's name, else the model id.
import { z } from 'zod';
import { MAX_N, MAX_TOP_LOGPROBS, stopSchema } from './schema.ts';
import type { TopLogProb } from '../../models/types.ts';

const tokenIds = z.array(z.number().int().min(0)).min(1, 'a token-id prompt needs at least one token');

export const completionRequestSchema = z.looseObject({
  model: z.string().optional(),
  prompt: z.union([z.string().min(1), tokenIds, z.array(tokenIds).min(1)], {
    error: 'must be a string, a list of token ids or a list of such lists',
  }),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().min(-1).nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  n: z.number().int().min(1).max(MAX_N).nullish(),
  seed: z.number().int().nullish(),
  // The most likely tokens at each draw besides the sampled one (0: the sampled token's log-prob only).
  logprobs: z.number().int().min(0).max(MAX_TOP_LOGPROBS).nullish(),
  return_token_ids: z.boolean().nullish(),
  stop: stopSchema,
  stream: z.boolean().nullish(),
});

export const loadLoraSchema = z.looseObject({
  lora_name: z.string().min(1),
  lora_path: z.string().min(1),
  load_inplace: z.boolean().nullish(),
});
export const unloadLoraSchema = z.looseObject({ lora_name: z.string().min(1) });

/** One generated sequence as the engine gives it. */
export interface TokenChoice {
  tokens: number[];
  text: string;
  /** Log-prob of each token (raw_logprobs: temperature 1; processed_logprobs: at the request's temperature). */
  logProbs: number[];
  /** The most likely tokens at each draw (temperature 1), when the request asked for them. */
  topLogProbs: TopLogProb[][] | null;
  finishReason: 'stop' | 'length';
  /** The stop string that ended it (vLLM's stop_reason); null otherwise. */
  stopReason: string | null;
}

/** vLLM's /v1/completions response body for `prompts` (each with its n choices, in order). */
export function completionResponse(
  modelId: string,
  prompts: number[][],
  choices: TokenChoice[][],
  options: { logprobs: boolean; returnTokenIds: boolean; id: string },
): object {
  const flat = choices.flatMap((group, k) => group.map((c) => ({ c, prompt: prompts[k] })));
  const completionTokens = flat.reduce((s, { c }) => s + c.tokens.length, 0);
  const promptTokens = prompts.reduce((s, p) => s + p.length, 0);
  return {
    id: options.id,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: modelId,
    choices: flat.map(({ c, prompt }, index) => ({
      index,
      text: c.text,
      logprobs: options.logprobs
        ? {
            text_offset: offsets(c),
            token_logprobs: c.logProbs,
            tokens: c.tokens.map((t) => `token_id:${t}`),
            // vLLM's shape: the sampled token and the most likely ones at each draw.
            top_logprobs: c.tokens.map((t, i) => ({
              [`token_id:${t}`]: c.logProbs[i],
              ...Object.fromEntries((c.topLogProbs?.[i] ?? []).map((e) => [`token_id:${e.token}`, e.logProb])),
            })),
          }
        : null,
      finish_reason: c.finishReason,
      stop_reason: c.stopReason,
      prompt_logprobs: null,
      ...(options.returnTokenIds ? { prompt_token_ids: prompt, token_ids: c.tokens } : {}),
    })),
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
  };
}

/** Offsets of the tokens in the text (the built-in model reads about one character per token: an approximation). */
function offsets(c: TokenChoice): number[] {
  return c.tokens.map((_, i) => Math.min(i, c.text.length));
}
