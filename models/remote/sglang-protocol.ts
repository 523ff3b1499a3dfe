// SGLang's native dialect as a rollout client speaks it; shapes kept as fixtures in
// tests/fixtures/rollout/ (verified against the protocol only: no SGLang server runs here):
//   POST /generate {input_ids: [ids, …] (the prompt once per completion of the group: one batch, SGLang's radix
//                   cache shares the prefix), sampling_params: {temperature, top_p, max_new_tokens, sampling_seed},
//                   return_logprob: true, lora_path: <adapter name>}
//   Image prompts add image_data: the prompt's images as data URLs, one list per entry of input_ids (SGLang's
//                   list of lists for a batch); input_ids then hold the prompt as metrl tokenised it, image tokens included.
//     → one object per completion: text, meta_info.output_token_logprobs as [logprob, token_id, text] tuples,
//       meta_info.finish_reason.type ("stop" | "length"), meta_info.prompt_tokens (the prompt's length as the server
//       counted it: SGLang does not return the prompt's ids, and replaces image tokens with its own pad values)
//   POST /load_lora_adapter {lora_name, lora_path}, /unload_lora_adapter {lora_name} (SGLang started with
//                   --enable-lora); a name loads once, so each adapter version gets its own name.
import { z } from 'zod';
import { truncation } from './vllm-protocol.ts';
import type { Completion, SamplingOptions } from '../types.ts';

export const sglangAdapterName = (version: number) => `metrl-v${version}`;

export function sglangGenerateRequest(
  adapter: string,
  promptTokens: number[],
  group: number,
  options: SamplingOptions,
  seed: number,
  images: string[] = [],
): object {
  return {
    input_ids: Array.from({ length: group }, () => promptTokens),
    ...(images.length > 0 ? { image_data: Array.from({ length: group }, () => images) } : {}),
    sampling_params: {
      temperature: options.temperature,
      top_p: options.topP,
      ...truncation(options),
      max_new_tokens: options.maxNewTokens,
      sampling_seed: seed,
    },
    return_logprob: true,
    lora_path: Array.from({ length: group }, () => adapter),
  };
}

const itemSchema = z.looseObject({
  text: z.string(),
  meta_info: z.looseObject({
    output_token_logprobs: z.array(z.tuple([z.number().nullable(), z.number().int()]).rest(z.unknown()), {
      error: 'no output_token_logprobs (the request asked for return_logprob: true)',
    }),
    finish_reason: z.looseObject({ type: z.string() }).nullable(),
    prompt_tokens: z.number().int().optional(),
  }),
});

/** The group's completions and the prompt length the server counted (null: not returned); a string says what is wrong. */
export function parseSglangGenerate(
  json: unknown,
  group: number,
): { completions: Completion[]; promptTokens: number | null } | string {
  const parsed = z.array(itemSchema).safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `${issue.path.join('.') || 'body'}: ${issue.message}`;
  }
  if (parsed.data.length !== group) return `${parsed.data.length} results for ${group} prompts`;
  const out: Completion[] = [];
  const counts = new Set(parsed.data.map((item) => item.meta_info.prompt_tokens));
  if (counts.size > 1) return `results count ${[...counts].join(' and ')} prompt tokens for one prompt`;
  for (const [i, item] of parsed.data.entries()) {
    const tuples = item.meta_info.output_token_logprobs;
    if (tuples.some((t) => t[0] === null)) return `result ${i}: a null logprob`;
    out.push({
      tokens: tuples.map((t) => t[1]),
      text: item.text,
      logProbs: Float32Array.from(tuples, (t) => t[0] as number),
      finished: item.meta_info.finish_reason?.type === 'stop',
    });
  }
  return { completions: out, promptTokens: parsed.data[0]?.meta_info.prompt_tokens ?? null };
}
