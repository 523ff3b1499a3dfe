// One bounded HTTP exchange with a rollout server: POST a JSON body, read the whole answer, all within
// one deadline (connect, send, wait and read: AbortSignal.timeout). A refused or reset connection and a deadline that
// passes are ServerDown (the server may answer again later: the caller retries on another replica); any status is
// returned with its text for the protocol files to judge. A connection the server closed before answering is tried
// once more first (the keep-alive race below).
export class ServerDown extends Error {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super(`${url}: ${reason}`);
    this.name = 'ServerDown';
  }
}

export interface HttpAnswer {
  status: number;
  text: string;
}

/** Connection closed before any answer: what a kept-alive connection gives when the server's idle timer closes it as a request goes out. */
const CLOSED_BEFORE_ANSWER = new Set(['UND_ERR_SOCKET', 'ECONNRESET']);

export async function postJson(url: string, body: unknown, timeoutMs: number): Promise<HttpAnswer> {
  const signal = AbortSignal.timeout(timeoutMs);
  const text = JSON.stringify(body);
  // A connection closed before any answer is sent once more, on a fresh connection, within the same deadline: a server
  // whose event loop was busy generating can close an idle kept-alive connection just as the next request arrives on
  // it (its timers run before it reads). A second close means the server is down.
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: text,
        signal,
      });
      return { status: response.status, text: await response.text() };
    } catch (error) {
      const code = (error as { cause?: { code?: string } })?.cause?.code;
      if (attempt === 1 && code !== undefined && CLOSED_BEFORE_ANSWER.has(code) && !signal.aborted) continue;
      throw new ServerDown(url, describeFetchError(error, timeoutMs));
    }
  }
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
