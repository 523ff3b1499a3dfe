// An --endpoint checked before `metrl evaluate` prints or writes anything: a connection must be possible at its URL
// (GET <endpoint>/models). Any status counts as an answer (401 or 404 are the harness's to judge on the first
// request, with the key); a refused connection, an unknown host or a port fetch refuses is one line naming the
// endpoint and the fix, exit 2, before "N items to evaluate" and before the run folder exists. A server that accepts
// the connection and stays silent is left to the harness's per-request timeout and retries (a partial result).
import { UserError } from '../core/errors.ts';

/** Longest the check waits for an answer (at most the harness's own --timeout). */
const CHECK_MS = 10_000;

export async function preflightEndpoint(endpoint: string, timeoutMs = CHECK_MS): Promise<void> {
  // The client takes the base URL (…/v1) or the chat route itself.
  const base = endpoint.replace(/\/+$/, '').replace(/\/chat\/completions$/, '');
  const flag = `--endpoint ${endpoint}`;
  try {
    const response = await fetch(`${base}/models`, { signal: AbortSignal.timeout(Math.min(CHECK_MS, timeoutMs)) });
    await response.body?.cancel();
  } catch (error) {
    const e = error as { name?: string; cause?: { code?: string; message?: string }; message?: string };
    if (e.name === 'TimeoutError') return; // connected, silent: the harness judges it
    const reason = e.cause?.code ?? e.cause?.message ?? e.message ?? String(error);
    if (reason === 'bad port')
      throw new UserError(
        `${flag}: port ${new URL(base).port} is one that fetch refuses to connect to (a port the Fetch standard blocks); run the server on another port`,
      );
    throw new UserError(`${flag}: nothing answers there (${reason}); start the server, or correct the URL`);
  }
}
