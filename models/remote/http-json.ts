// One bounded HTTP exchange with a rollout server: POST a JSON body (or GET), read the whole answer, all within
// one deadline (connect, send, wait and read: AbortSignal.timeout) and within a size bound (an answer past it is
// AnswerTooLarge, read no further: a server that streams without end cannot fill the memory). A refused or reset
// connection and a deadline that passes are ServerDown (the server may answer again later: the caller retries on
// another replica); any status is returned with its text for the protocol files to judge. A connection the server
// closed before answering is tried once more first (the keep-alive race below).
export class ServerDown extends Error {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super(`${url}: ${reason}`);
    this.name = 'ServerDown';
  }
}

/** An answer longer than the bound the caller set. */
export class AnswerTooLarge extends Error {
  constructor(
    readonly url: string,
    readonly maxBytes: number,
  ) {
    super(`${url}: the answer is over ${formatBytes(maxBytes)}, more than this request can need`);
    this.name = 'AnswerTooLarge';
  }
}

export interface HttpAnswer {
  status: number;
  text: string;
}

/** What an answer without a bound of its own may hold: an adapter load's text, a model list, an error. */
const SMALL_ANSWER_BYTES = 1024 * 1024;

/** Connection closed before any answer: what a kept-alive connection gives when the server's idle timer closes it as a request goes out. */
const CLOSED_BEFORE_ANSWER = new Set(['UND_ERR_SOCKET', 'ECONNRESET']);

export function postJson(
  url: string,
  body: unknown,
  timeoutMs: number,
  maxBytes = SMALL_ANSWER_BYTES,
): Promise<HttpAnswer> {
  return exchange(url, JSON.stringify(body), timeoutMs, maxBytes);
}

/** GET `url` (a model list), under the same deadline and bound. */
export function getJson(url: string, timeoutMs: number, maxBytes = SMALL_ANSWER_BYTES): Promise<HttpAnswer> {
  return exchange(url, null, timeoutMs, maxBytes);
}

async function exchange(url: string, text: string | null, timeoutMs: number, maxBytes: number): Promise<HttpAnswer> {
  const signal = AbortSignal.timeout(timeoutMs);
  // A connection closed before any answer is sent once more, on a fresh connection, within the same deadline: a server
  // whose event loop was busy generating can close an idle kept-alive connection just as the next request arrives on
  // it (its timers run before it reads). A second close means the server is down.
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(
        url,
        text === null
          ? { signal }
          : { method: 'POST', headers: { 'content-type': 'application/json' }, body: text, signal },
      );
      return { status: response.status, text: await readBounded(response, url, maxBytes) };
    } catch (error) {
      if (error instanceof AnswerTooLarge) throw error;
      const code = (error as { cause?: { code?: string } })?.cause?.code;
      if (attempt === 1 && code !== undefined && CLOSED_BEFORE_ANSWER.has(code) && !signal.aborted) continue;
      throw new ServerDown(url, describeFetchError(error, timeoutMs));
    }
  }
}

/** The body as text, read chunk by chunk and given up (the connection cancelled) once it passes maxBytes. */
async function readBounded(response: Response, url: string, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new AnswerTooLarge(url, maxBytes);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new AnswerTooLarge(url, maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${Math.round(n / 1024 / 1024)} MB` : `${Math.round(n / 1024)} kB`;
}

function describeFetchError(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(error);
}

/** The error text of a non-2xx answer: OpenAI/vLLM's {error: {message}}, vLLM's older {message}, else the text. */
export function errorMessage(answer: HttpAnswer): string {
  try {
    const json = JSON.parse(answer.text) as {
      error?: { message?: string } | string;
      message?: string;
      detail?: string;
    };
    const message = typeof json.error === 'string' ? json.error : (json.error?.message ?? json.message ?? json.detail);
    if (typeof message === 'string') return message.slice(0, 300);
  } catch {
    // not JSON
  }
  return answer.text.slice(0, 300) || `status ${answer.status}`;
}
