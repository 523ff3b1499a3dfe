// Retrying model requests. Every failure of a source is classified once, here: rate limits (429), server errors (5xx),
// timeouts and dropped connections are retried with exponential backoff (honouring Retry-After); 400, 401, 402, 403
// and 404, as in the MET-Bench harness, and an endpoint nobody answers at, mean the whole run cannot succeed (a request
// the server refuses, such as a parameter a reasoning model does not take, a bad key, no credit, no access, a wrong
// model or URL) and stop it; anything else (a malformed reply) fails only its item, which `--resume` retries later.
import { Rng } from '../core/rng.ts';

export type FailureKind = 'retryable' | 'fatal' | 'item';

export class RequestFailure extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly status: number | null = null,
    /** Milliseconds the server asked us to wait (Retry-After), when it said. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'RequestFailure';
  }
}

const FATAL_STATUSES = new Set([400, 401, 402, 403, 404]);

export function kindOfStatus(status: number): FailureKind {
  if (FATAL_STATUSES.has(status)) return 'fatal';
  if (status === 429 || status === 408 || status >= 500) return 'retryable';
  return 'item';
}

/** Retry-After is either delta-seconds or an HTTP date; returns milliseconds from `now`, or null when absent/garbled. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (value === null || value === undefined || value.trim() === '') return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff delay; doubles each attempt. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Per-attempt timeout. */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 6, baseDelayMs: 1000, maxDelayMs: 60_000, timeoutMs: 120_000 };

/** Delay before retry number `attempt` (0-based): Retry-After when given, else jittered exponential backoff. */
export function backoffDelay(policy: RetryPolicy, attempt: number, retryAfterMs: number | null, rng: Rng): number {
  // A server's Retry-After is honoured as asked (capped, so a silly value cannot hang the run for hours).
  if (retryAfterMs !== null) return Math.min(retryAfterMs, 10 * policy.maxDelayMs);
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  // Full jitter in [exp/2, exp): workers that failed together do not retry in lockstep.
  return exp / 2 + rng.next() * (exp / 2);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface RetryOutcome<T> {
  value: T;
  attempts: number;
}

/**
 * Run `attempt` until it succeeds, fails for good, or the run is stopped. Each attempt gets its own signal that fires
 * on the per-attempt timeout or when `runSignal` aborts (a fatal error elsewhere, Ctrl-C). Throws RequestFailure.
 */
export async function withRetries<T>(
  attempt: (signal: AbortSignal) => Promise<T>,
  policy: RetryPolicy,
  rng: Rng,
  runSignal: AbortSignal,
  onRetry?: (failure: RequestFailure, delayMs: number) => void,
): Promise<RetryOutcome<T>> {
  for (let n = 0; ; n++) {
    if (runSignal.aborted) throw new RequestFailure('run stopped', 'fatal');
    const timeout = AbortSignal.timeout(policy.timeoutMs);
    const signal = AbortSignal.any([runSignal, timeout]);
    let failure: RequestFailure;
    try {
      return { value: await attempt(signal), attempts: n + 1 };
    } catch (error) {
      if (runSignal.aborted) throw new RequestFailure('run stopped', 'fatal');
      failure = timeout.aborted
        ? new RequestFailure(`timed out after ${policy.timeoutMs / 1000}s`, 'retryable')
        : toFailure(error);
    }
    if (failure.kind !== 'retryable') throw withAttempts(failure, n + 1);
    if (n >= policy.retries)
      throw withAttempts(
        new RequestFailure(`${failure.message} (gave up after ${n + 1} attempts)`, 'item', failure.status),
        n + 1,
      );
    const delay = backoffDelay(policy, n, failure.retryAfterMs, rng);
    onRetry?.(failure, delay);
    try {
      await sleep(delay, runSignal);
    } catch {
      throw new RequestFailure('run stopped', 'fatal');
    }
  }
}

function withAttempts(failure: RequestFailure, attempts: number): RequestFailure {
  (failure as RequestFailure & { attempts?: number }).attempts = attempts;
  return failure;
}

export function attemptsOf(error: unknown): number {
  return (error as { attempts?: number } | null)?.attempts ?? 1;
}

interface NetworkCause {
  code?: string;
  message?: string;
  address?: string;
  port?: number;
  hostname?: string;
}

/** Codes that mean nobody answers at that address: a wrong --endpoint or a server that is not running. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/**
 * The innermost error under `error.cause` (fetch wraps the socket error in "fetch failed", and clients wrap that again);
 * for an AggregateError (both addresses of "localhost" refused) its first error.
 */
function networkCause(error: unknown): NetworkCause | undefined {
  let found: NetworkCause | undefined;
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    const errors = (current as { errors?: unknown }).errors;
    const here = current as NetworkCause;
    if (here.code !== undefined || current.message === 'bad port') found = here;
    current = current.cause ?? (Array.isArray(errors) ? errors[0] : undefined);
  }
  return found;
}

/**
 * Anything thrown by a source that is not yet a RequestFailure. Nobody listening (connection refused) or no such host
 * is a wrong --endpoint, not a hiccup: fatal, so the run stops at once instead of retrying every item for a minute.
 * Dropped connections and other network errors are transient; the rest fails the item.
 */
export function toFailure(error: unknown): RequestFailure {
  if (error instanceof RequestFailure) return error;
  const message = error instanceof Error ? error.message : String(error);
  const cause = networkCause(error);
  if (cause?.code !== undefined && UNREACHABLE.has(cause.code)) {
    const where =
      cause.hostname ?? (cause.address ? `${cause.address}${cause.port ? `:${cause.port}` : ''}` : 'the endpoint');
    return new RequestFailure(
      `cannot reach ${where} (${cause.code}): is the server running, and the URL right?`,
      'fatal',
    );
  }
  if (cause?.message === 'bad port')
    return new RequestFailure(
      'the endpoint\'s port is one fetch refuses to connect to (a "bad port"): choose another',
      'fatal',
    );
  if (
    cause?.code !== undefined &&
    /^(CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|UNABLE_TO_VERIFY|ERR_TLS_CERT)/.test(cause.code)
  ) {
    return new RequestFailure(`the endpoint's TLS certificate is not trusted (${cause.code})`, 'fatal');
  }
  if (cause?.code && /^(ECONNRESET|EPIPE|ETIMEDOUT|UND_ERR_|EAI_AGAIN)/.test(cause.code)) {
    return new RequestFailure(`${message} (${cause.code})`, 'retryable');
  }
  if (/fetch failed|socket hang up|network/i.test(message)) return new RequestFailure(message, 'retryable');
  return new RequestFailure(message, 'item');
}
