// vLLM's dialect in `metrl serve`: POST /v1/completions with the prompt as token ids (one list, or a
// list of lists), `n`, `temperature`, `top_p`, `max_tokens`, `seed`, `logprobs` (0: the sampled token's only) and
// `return_token_ids`, answered in vLLM's shape (choices[i].token_ids, choices[i].logprobs.token_logprobs,
// choices[i].prompt_token_ids; prompt k's n choices at indices k·n … k·n+n−1), and vLLM's runtime LoRA routes POST
// /v1/load_lora_adapter {lora_name, lora_path, load_inplace} and /v1/unload_lora_adapter {lora_name}, present only
// with --enable-lora (vLLM's --enable-lora with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; without it vLLM has no such
// route: 404). With these, a `metrl serve` process is a rollout server for `metrl train --rollout-server`
// (models/remote/). A request names the served model: the loaded adapter's name, else the model id (vLLM: 404).
import { z } from 'zod';
import { MAX_N } from './schema.ts';

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
  logprobs: z
    .number()
    .int()
    .min(0)
    .max(0, "metrl serve returns the sampled token's log-prob only (logprobs: 0)")
    .nullish(),
  return_token_ids: z.boolean().nullish(),
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
  finishReason: 'stop' | 'length';
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
            top_logprobs: c.tokens.map((t, i) => ({ [`token_id:${t}`]: c.logProbs[i] })),
          }
        : null,
      finish_reason: c.finishReason,
      stop_reason: null,
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
