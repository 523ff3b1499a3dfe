// The log-prob fields of /v1/chat/completions as `metrl serve` answers them: with `logprobs: true` each
// choice carries logprobs.content, one {token, logprob, bytes, top_logprobs} entry per generated token (top_logprobs:
// the request's top_logprobs most likely tokens at that draw, best first), and with vLLM's `return_token_ids: true`
// the answer carries the prompt's token ids
// at the top level (prompt_token_ids: the chat messages as the policy's chatPrompt tokenised them, images included)
// and each choice its generated ids (choices[i].token_ids, ending with EOS when the model stopped), as vLLM does. The
// rollout client (models/remote/) sends image prompts this way and checks prompt_token_ids against its own.
import type { TokenChoice } from './completions.ts';

export interface ChatTokenOptions {
  logprobs: boolean;
  returnTokenIds: boolean;
  id: string;
  /** A token's text, for logprobs.content[j].token. */
  tokenText(token: number): string;
}

export function chatTokenResponse(
  modelId: string,
  prompt: number[],
  choices: TokenChoice[],
  options: ChatTokenOptions,
): object {
  const completionTokens = choices.reduce((s, c) => s + c.tokens.length, 0);
  return {
    id: options.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: modelId,
    choices: choices.map((c, index) => ({
      index,
      message: { role: 'assistant', content: c.text },
      logprobs: options.logprobs
        ? {
            content: c.tokens.map((t, j) => ({
              ...logprobEntry(options.tokenText(t), c.logProbs[j]),
              top_logprobs: (c.topLogProbs?.[j] ?? []).map((e) => logprobEntry(options.tokenText(e.token), e.logProb)),
            })),
          }
        : null,
      finish_reason: c.finishReason,
      stop_reason: c.stopReason,
      ...(options.returnTokenIds ? { token_ids: c.tokens } : {}),
    })),
    usage: {
      prompt_tokens: prompt.length,
      completion_tokens: completionTokens,
      total_tokens: prompt.length + completionTokens,
    },
    ...(options.returnTokenIds ? { prompt_token_ids: prompt } : {}),
  };
}

function logprobEntry(token: string, logprob: number): { token: string; logprob: number; bytes: number[] } {
  return { token, logprob, bytes: Array.from(Buffer.from(token, 'utf8')) };
}
