// A fetch for the Hub downloads with time limits of its own: Node's fetch waits 300 s for a server that accepts the
// connection and never answers, and for ever for a body that stops mid-way. Connecting and waiting for the headers,
// and each wait for the next piece of the body, get at most `idleMs`; past that the request is aborted with a
// HubTimeout, which the caller turns into one line. The limit is HF_HUB_DOWNLOAD_TIMEOUT in seconds (default 10, as
// Python's huggingface_hub reads it). A body is also read up to a size only (MAX_HUB_BYTES, far beyond a MET-Bench
// shard): past it the read fails with HubTooLarge, so a server that streams without end cannot fill the disk.
import { z } from 'zod';
import { parseOrFail } from '../../core/errors.ts';

export class HubTimeout extends Error {
  constructor(
    readonly url: string,
    readonly seconds: number,
    readonly phase: 'answer' | 'body',
  ) {
    super(`${new URL(url).host} sent ${phase === 'answer' ? 'no answer' : 'nothing more'} within ${seconds} s`);
    this.name = 'HubTimeout';
  }
}

/** A Hub answer longer than MAX_HUB_BYTES. */
export class HubTooLarge extends Error {
  constructor(
    readonly url: string,
    maxBytes: number,
  ) {
    const size = maxBytes >= 1024 ** 3 ? `${maxBytes / 1024 ** 3} GB` : `${Math.round(maxBytes / 1024 ** 2)} MB`;
    super(`${new URL(url).host} sent more than ${size} for one file`);
    this.name = 'HubTooLarge';
  }
}

/** The most one Hub answer may hold: MET-Bench's largest shard (chess, with images) is a small fraction of it. */
const MAX_HUB_BYTES = 4 * 1024 ** 3;

/** huggingface_hub's default for HF_HUB_DOWNLOAD_TIMEOUT. */
const DEFAULT_HUB_TIMEOUT_S = 10;

/** HF_HUB_DOWNLOAD_TIMEOUT in seconds; a value that is not a positive number is a UserError naming the variable. */
export function hubTimeoutSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.HF_HUB_DOWNLOAD_TIMEOUT;
  if (raw === undefined || raw.trim() === '') return DEFAULT_HUB_TIMEOUT_S;
  return parseOrFail(z.coerce.number().positive().max(3600), raw, 'HF_HUB_DOWNLOAD_TIMEOUT: ');
}

/** `fetch` with the connect, answer and idle bounds; its body is re-streamed so every read is bounded. */
export function boundedFetch(idleMs: number, inner: typeof fetch = fetch, maxBytes = MAX_HUB_BYTES): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const controller = new AbortController();
    const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
    const expire = (phase: 'answer' | 'body') =>
      setTimeout(() => controller.abort(new HubTimeout(url, idleMs / 1000, phase)), idleMs);
    let timer = expire('answer');
    let response: Response;
    try {
      response = await inner(input, { ...init, signal });
    } finally {
      clearTimeout(timer);
    }
    if (response.body === null) return response;
    const reader = response.body.getReader();
    let size = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(stream) {
        timer = expire('body');
        try {
          const { done, value } = await reader.read();
          if (done) stream.close();
          else if ((size += value.byteLength) > maxBytes) {
            await reader.cancel();
            stream.error(new HubTooLarge(url, maxBytes));
          } else stream.enqueue(value);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    const bounded = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    // What a constructed Response cannot be given, and the Hub client reads (redirected downloads).
    Object.defineProperties(bounded, { url: { value: response.url }, redirected: { value: response.redirected } });
    return bounded;
  };
}

/** The HubTimeout or HubTooLarge anywhere under an error's causes (the Hub client wraps what fetch throws), else null. */
export function hubTimeoutIn(error: unknown): HubTimeout | HubTooLarge | null {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current instanceof HubTimeout || current instanceof HubTooLarge) return current;
    current = current.cause;
  }
  return null;
}
