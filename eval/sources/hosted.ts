// Hosted chat models through @huggingface/inference's chatCompletion: a model on Hugging Face Inference Providers
// (`--provider`), or any OpenAI-compatible endpoint (`--endpoint`: vLLM, TGI, llama.cpp, `metrl serve`), which the
// library reaches when given `endpointUrl` (it appends /v1/chat/completions when the URL does not end with it).
// The library's own retry-on-503 loop is switched off: retries, backoff and Retry-After are the harness's job
// (eval/retry.ts), so a custom fetch records each response's status and Retry-After header for it, and bounds the
// size of the reply it reads.
import { chatCompletion, InferenceClientInputError, type InferenceProviderOrPolicy } from '@huggingface/inference';
import { z } from 'zod';
import type { ChatMessage } from '../../core/chat.ts';
import { redact } from '../../core/secrets.ts';
import { limitBody } from '../../core/bounded-body.ts';
import { RequestFailure, kindOfStatus, parseRetryAfter, toFailure } from '../retry.ts';
import type { ModelSource, Query, SamplingSettings, SourceReply, TokenUsage } from '../types.ts';

export interface HostedOptions {
  model: string;
  /** Inference Providers routing (e.g. 'together', 'auto'); exclusive with endpointUrl. */
  provider?: string;
  endpointUrl?: string;
  /** Read from the environment by the caller; never logged or stored. */
  accessToken?: string;
  sampling: SamplingSettings;
  toChat: (query: Query) => Promise<ChatMessage[]>;
}

/** The part of a chat completion we rely on; anything else the server sends is ignored. */
const completionSchema = z.object({
  choices: z
    .array(
      z
        .object({ message: z.object({ content: z.string().nullish() }).passthrough(), finish_reason: z.unknown() })
        .passthrough(),
    )
    .min(1, 'no choices in the reply'),
  usage: z
    .object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number().optional() })
    .passthrough()
    .nullish(),
});

/** Far beyond a chat completion of 32,768 tokens: a reply past it is read no further (core/bounded-body.ts). */
const MAX_REPLY_BYTES = 32 * 1024 * 1024;
const replyTooLarge = () =>
  new RequestFailure(`the reply is over ${MAX_REPLY_BYTES / 1024 / 1024} MB; read no further`, 'item');

export function hostedSource(options: HostedOptions): ModelSource {
  const label = options.model;
  return {
    label,
    async complete(query, signal): Promise<SourceReply> {
      const messages = await options.toChat(query);
      let seen: Response | null = null;
      const recordingFetch: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        seen = response;
        return limitBody(response, MAX_REPLY_BYTES, replyTooLarge);
      };
      let output: unknown;
      try {
        output = await chatCompletion(
          {
            model: options.model,
            ...(options.endpointUrl
              ? { endpointUrl: options.endpointUrl }
              : { provider: options.provider as InferenceProviderOrPolicy }),
            ...(options.accessToken ? { accessToken: options.accessToken } : {}),
            messages: messages as Parameters<typeof chatCompletion>[0]['messages'],
            ...requestSettings(options.sampling),
          },
          { fetch: recordingFetch, signal, retry_on_error: false },
        );
      } catch (error) {
        throw classify(error, seen);
      }
      const parsed = completionSchema.safeParse(output);
      if (!parsed.success)
        throw new RequestFailure(`malformed reply: ${parsed.error.issues[0]?.message ?? 'unexpected shape'}`, 'item');
      const reply = parsed.data;
      const usage: TokenUsage | null = reply.usage
        ? {
            prompt_tokens: reply.usage.prompt_tokens,
            completion_tokens: reply.usage.completion_tokens,
            total_tokens: reply.usage.total_tokens ?? reply.usage.prompt_tokens + reply.usage.completion_tokens,
          }
        : null;
      const finish = reply.choices[0].finish_reason;
      return {
        text: redact(reply.choices[0].message.content ?? ''),
        usage,
        finishReason: typeof finish === 'string' ? finish : null,
      };
    },
  };
}

/**
 * The sampling fields of a request, as the MET-Bench harness sends them: the token budget under the chosen field
 * (max_completion_tokens by default), the temperature unless omitted, reasoning_effort when given.
 */
function requestSettings(sampling: SamplingSettings): Record<string, number | string> {
  return {
    [sampling.tokenParameter ?? 'max_completion_tokens']: sampling.maxTokens,
    ...(sampling.temperature !== null ? { temperature: sampling.temperature } : {}),
    ...(sampling.reasoningEffort ? { reasoning_effort: sampling.reasoningEffort } : {}),
  };
}

/** Turn a library error into a RequestFailure; the message never carries request headers (the key lives there). */
function classify(error: unknown, response: Response | null): RequestFailure {
  const failure = classifyUnredacted(error, response);
  const message = redact(failure.message);
  return message === failure.message
    ? failure
    : new RequestFailure(message, failure.kind, failure.status, failure.retryAfterMs);
}

function classifyUnredacted(error: unknown, response: Response | null): RequestFailure {
  if (error instanceof RequestFailure) return error;
  if (error instanceof InferenceClientInputError) return new RequestFailure(error.message, 'fatal');
  const status = statusOf(error) ?? (response && !response.ok ? response.status : null);
  if (status !== null) {
    const retryAfter = parseRetryAfter(response?.headers.get('retry-after'));
    return new RequestFailure(`HTTP ${status}: ${detailOf(error)}`, kindOfStatus(status), status, retryAfter);
  }
  // No HTTP status: a network error (retried) or something unexpected (fails the item).
  return toFailure(error);
}

function statusOf(error: unknown): number | null {
  const status = (error as { httpResponse?: { status?: unknown } } | null)?.httpResponse?.status;
  return typeof status === 'number' ? status : null;
}

/** The server's own error text when it gave one (OpenAI style `{error: {message}}` included), else the library's. */
function detailOf(error: unknown): string {
  const body = (error as { httpResponse?: { body?: unknown } }).httpResponse?.body as
    | { error?: unknown; message?: unknown; detail?: unknown }
    | string
    | undefined;
  let text: unknown;
  if (typeof body === 'string' && body.trim() !== '') text = body;
  else if (body && typeof body === 'object') {
    const inner = body.error as { message?: unknown } | string | undefined;
    text = typeof inner === 'string' ? inner : (inner?.message ?? body.message ?? body.detail);
  }
  const message = typeof text === 'string' ? text : error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').slice(0, 300);
}
