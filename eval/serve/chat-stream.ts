// A streamed chat completion (`stream: true`) as OpenAI sends one: server-sent events, each `data: {chunk}` a
// chat.completion.chunk. Every choice first gets a delta with its role, then deltas of its new text as the decoding
// rounds produce it (decode-scheduler.ts), then one with its finish_reason; choices of n > 1 are told apart by index.
// With stream_options.include_usage every chunk carries `usage: null` and a last chunk with no choices carries the
// usage. The stream ends with `data: [DONE]`. An error after the first event is one `data: {"error": …}` event (what
// OpenAI's SDKs raise as an APIError), and the stream closes.
import type { ServerResponse } from 'node:http';
import type { ChoiceProgress } from './decode-scheduler.ts';

export interface ChatStreamOptions {
  id: string;
  model: string;
  n: number;
  includeUsage: boolean;
}

export interface ChatStream {
  /** New text of each choice (its whole final text so far), and finish reasons as choices end. */
  progress(choices: readonly ChoiceProgress[]): void;
  /** The end: the usage chunk when asked for, then [DONE]. */
  finish(usage: { promptTokens: number; completionTokens: number }): void;
  /** An error once streaming has begun. */
  fail(message: string, type: string): void;
}

export function startChatStream(res: ServerResponse, options: ChatStreamOptions): ChatStream {
  const created = Math.floor(Date.now() / 1000);
  const sent = Array.from({ length: options.n }, () => ({ text: '', finished: false }));
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const event = (data: string) => {
    if (!res.writableEnded && !res.destroyed) res.write(`data: ${data}\n\n`);
  };
  const chunk = (choices: object[], usage?: object) =>
    event(
      JSON.stringify({
        id: options.id,
        object: 'chat.completion.chunk',
        created,
        model: options.model,
        choices,
        ...(options.includeUsage ? { usage: usage ?? null } : {}),
      }),
    );
  chunk(
    sent.map((_, index) => ({ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null })),
  );
  return {
    progress(choices) {
      const deltas: object[] = [];
      choices.forEach((c, index) => {
        const was = sent[index];
        if (was.finished) return;
        // The final text only grows; a text that is not an extension of what was sent (a tokenizer that decodes a
        // prefix otherwise) sends what is past the sent length.
        const delta = c.text.length > was.text.length ? c.text.slice(was.text.length) : '';
        if (delta !== '') {
          deltas.push({ index, delta: { content: delta }, logprobs: null, finish_reason: null });
          was.text = c.text;
        }
        if (c.finishReason !== null) {
          deltas.push({ index, delta: {}, logprobs: null, finish_reason: c.finishReason });
          was.finished = true;
        }
      });
      for (const d of deltas) chunk([d]);
    },
    finish({ promptTokens, completionTokens }) {
      if (options.includeUsage)
        chunk([], {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        });
      event('[DONE]');
      res.end();
    },
    fail(message, type) {
      event(JSON.stringify({ error: { message, type, param: null, code: null } }));
      res.end();
    },
  };
}
