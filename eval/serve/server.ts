// `metrl serve`'s HTTP side, on node:http: POST /v1/chat/completions (streamed as server-sent events with
// `stream: true`: chat-stream.ts) and GET /v1/models in the OpenAI shape, plus GET /health, and vLLM's token-id
// /v1/completions, the chat fields logprobs, top_logprobs and return_token_ids (chat-token-ids.ts) and runtime LoRA
// routes where the engine has them (completions.ts). Every request body goes through zod; anything malformed (bad
// JSON, wrong fields, an image that is not a decodable data URL, a body over the size limit, more work than one
// request may ask for) gets a 4xx with an OpenAI-style JSON error body and never takes the server down.
// `model`, on every route: one model is served at a time, so a request may name it as it likes (or not at all: what
// @huggingface/inference sends given only an endpoint URL is that URL), and every answer names the model that
// served it — the loaded adapter's name, else the model id (vLLM answers requests for unknown names with 404; metrl
// serve has nothing else to serve them with). A client that cares checks the answer's `model`, as the rollout client
// does. Generation is delegated to a ChatEngine; the built-in one decodes every request in flight together, and a
// request whose client hung up stops being decoded (decode-scheduler.ts).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { chatRequestSchema, isImageDataUrl, type ChatRequest } from './schema.ts';
import type { ChatMessage } from '../../core/chat.ts';
import { UserError } from '../../core/errors.ts';
import type { SamplingOptions } from '../../models/types.ts';
import { limitConnections } from '../connection-limit.ts';
import { chatTokenResponse } from './chat-token-ids.ts';
import { startChatStream } from './chat-stream.ts';
import { ClientGone, ServerBusy, type ChoiceProgress } from './decode-scheduler.ts';
import {
  completionRequestSchema,
  completionResponse,
  loadLoraSchema,
  unloadLoraSchema,
  type TokenChoice,
} from './completions.ts';

export interface EngineSampling {
  temperature: number;
  topP: number;
  /** vLLM's top_k and min_p as SamplingOptions holds them (absent: off). */
  truncation: Pick<SamplingOptions, 'topK' | 'minP'>;
  maxTokens: number;
  n: number;
  seed: number | null;
  /** A choice ends before the first of these it writes. */
  stop: string[];
  /** The most likely tokens of each draw to report (0: none). */
  topLogprobs: number;
  /** Aborted when the client hangs up: the engine stops decoding for it. */
  signal?: AbortSignal;
  /** A streamed request: each choice's final text so far, after every decoding round. */
  onProgress?: (choices: readonly ChoiceProgress[]) => void;
}

interface EngineChoice {
  text: string;
  /** 'stop' when the model ended its answer, 'length' when it hit max tokens. */
  finishReason: 'stop' | 'length';
  completionTokens: number;
}

export interface EngineResult {
  choices: EngineChoice[];
  promptTokens: number;
}

export interface ChatEngine {
  readonly modelId: string;
  /** Largest max_tokens the engine accepts (context left after a typical prompt). */
  readonly maxTokensLimit: number;
  readonly defaultMaxTokens: number;
  /**
   * Generate for validated chat messages (images are base64 data URLs). Called concurrently; a UserError means
   * the request cannot be served as it is (an undecodable image, a prompt longer than the context): a 400;
   * ServerBusy a 503; ClientGone (the client hung up) nothing.
   */
  complete(messages: ChatMessage[], sampling: EngineSampling): Promise<EngineResult>;
  /** vLLM's token-id dialect (completions.ts); absent: /v1/completions is a 404. */
  readonly tokens?: TokenEngine;
}

/** What /v1/completions and the LoRA routes need (eval/serve/completions.ts). */
export interface TokenEngine {
  /** The name answers give as `model`: the loaded adapter's, else the model id. */
  servedModel(): string;
  /** A text prompt's token ids (as the model encodes text: BOS first). */
  encodeText(text: string): number[];
  /** A token's text (chat logprobs name each token). */
  tokenText(token: number): string;
  /** Each prompt's n choices; a UserError is a 400. */
  completeTokens(prompts: number[][], sampling: EngineSampling): Promise<TokenChoice[][]>;
  /** Chat messages tokenised by the policy (images as data URLs), and their n choices; a UserError is a 400. */
  completeChat(
    messages: ChatMessage[],
    sampling: EngineSampling,
  ): Promise<{ prompt: number[]; choices: TokenChoice[] }>;
  /** Runtime LoRA loading (--enable-lora); absent: the routes are 404, as on vLLM without it. UserError: a 400. */
  readonly adapters?: {
    load(name: string, path: string, inplace: boolean): Promise<void>;
    unload(name: string): Promise<void>;
  };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly type = status >= 500 ? 'server_error' : 'invalid_request_error',
    /** Seconds, for a 503. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

/** An engine's failure as the client is told it: a UserError is the request's fault (400), ServerBusy a 503. */
function httpErrorOf(error: unknown): unknown {
  if (error instanceof UserError) return new HttpError(400, error.message);
  if (error instanceof ServerBusy) return new HttpError(503, error.message, null, 'server_error', RETRY_AFTER_S);
  return error;
}

/** Seconds a client told 503 (the decoding queue is full) is asked to wait. */
const RETRY_AFTER_S = 1;

export interface ServeOptions {
  host: string;
  port: number;
  /** Largest request body accepted, in bytes. */
  maxBodyBytes?: number;
  /** Largest prompt text (all messages' text together), in characters: a longer one is a 400 before any encoding. */
  maxPromptChars?: number;
  /** Time a client has to send its request headers / its whole request; a slower one is disconnected (408). */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** How long a kept-alive connection may sit idle between requests. */
  keepAliveTimeoutMs?: number;
  /**
   * Connections open at once, so a flood of slow clients cannot exhaust the process: a connection over it takes the
   * slot of the oldest one not being answered, or gets 503 with Retry-After when all are (eval/connection-limit.ts).
   */
  maxConnections?: number;
  /**
   * Tokens one request may ask for, n × max_tokens: one request cannot hold the server for minutes (a 400 past it).
   */
  maxRequestTokens?: number;
  log?: (line: string) => void;
}

const DEFAULT_MAX_BODY = 32 * 1024 * 1024;
/** Far beyond any context the built-in model has (its tokenizer reads about one character per token). */
const DEFAULT_MAX_PROMPT_CHARS = 100_000;
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_CONNECTIONS = 64;
/** 16 choices of 1,024 tokens (the default max_tokens) fit; 16 of 3,000 do not. */
export const DEFAULT_MAX_REQUEST_TOKENS = 16_384;

export interface RunningServer {
  server: Server;
  url: string;
  close(): Promise<void>;
}

export async function startServer(engine: ChatEngine, options: ServeOptions): Promise<RunningServer> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const created = Math.floor(Date.now() / 1000);

  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const requestTimeout = Math.max(headersTimeout, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  // Node checks the header and request deadlines on this interval (default 30 s): check often enough to honour them.
  const checkEvery = Math.max(100, Math.min(1000, Math.floor(headersTimeout / 2)));
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      connectionsCheckingInterval: checkEvery,
      keepAliveTimeout: options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
    },
    (req, res) => {
      if (connections.refused(req.socket)) return; // already told 503; the connection is closing
      handle(req, res).catch((error: unknown) => {
        if (error instanceof ClientGone) return; // nobody is left to answer
        const status = error instanceof HttpError ? error.status : 500;
        if (status >= 500)
          options.log?.(
            `serve: ${req.method} ${req.url}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          );
        sendError(res, error instanceof HttpError ? error : new HttpError(500, 'internal error while generating'));
      });
    },
  );

  // Not server.maxConnections, which resets every connection over it: slow clients then lock normal ones out.
  const connections = limitConnections(server, options.maxConnections ?? DEFAULT_MAX_CONNECTIONS);
  const maxPromptChars = options.maxPromptChars ?? DEFAULT_MAX_PROMPT_CHARS;
  const maxRequestTokens = options.maxRequestTokens ?? DEFAULT_MAX_REQUEST_TOKENS;
  /** The model that answers now. */
  const served = () => engine.tokens?.servedModel() ?? engine.modelId;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = routeOf(req.url);
    if (path === '/v1/models' || path === '/models') {
      allow(req, 'GET');
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: engine.modelId, object: 'model', created, owned_by: 'metrl' }],
      });
    }
    if (path === '/health') {
      allow(req, 'GET');
      return sendJson(res, 200, { status: 'ok' });
    }
    if (path === '/v1/chat/completions' || path === '/chat/completions') {
      allow(req, 'POST');
      const request = parseRequest(await readBody(req, maxBody));
      const messages = toChatMessages(request);
      const chars = promptChars(messages);
      if (chars > maxPromptChars)
        throw new HttpError(
          400,
          `messages: ${chars} characters of text, more than this server accepts (${maxPromptChars}) and far beyond the model's context`,
          'messages',
        );
      const sampling = samplingOf(request, engine, maxRequestTokens, clientGone(res));
      const tokenFields = request.logprobs === true || request.return_token_ids === true;
      if (request.stream) {
        if (tokenFields)
          throw new HttpError(
            400,
            'stream: logprobs and return_token_ids are not streamed by metrl serve; send stream: false with them',
            'stream',
          );
        return streamChat(res, engine, messages, sampling, request.stream_options?.include_usage === true, served);
      }
      if (request.top_logprobs && request.logprobs !== true)
        throw new HttpError(400, 'top_logprobs: needs logprobs: true', 'top_logprobs');
      if (tokenFields) return sendJson(res, 200, await chatWithTokenIds(engine, request, messages, sampling));
      const result = await engine.complete(messages, sampling).catch((error: unknown) => {
        throw httpErrorOf(error);
      });
      const completionTokens = result.choices.reduce((s, c) => s + c.completionTokens, 0);
      return sendJson(res, 200, {
        id: `chatcmpl-${randomUUID()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: served(),
        choices: result.choices.map((c, index) => ({
          index,
          message: { role: 'assistant', content: c.text },
          logprobs: null,
          finish_reason: c.finishReason,
        })),
        usage: {
          prompt_tokens: result.promptTokens,
          completion_tokens: completionTokens,
          total_tokens: result.promptTokens + completionTokens,
        },
      });
    }
    if ((path === '/v1/completions' || path === '/completions') && engine.tokens) {
      allow(req, 'POST');
      const body = await readBody(req, maxBody);
      return sendJson(res, 200, await tokenCompletions(engine, engine.tokens, body, maxRequestTokens, clientGone(res)));
    }
    if ((path === '/v1/load_lora_adapter' || path === '/v1/unload_lora_adapter') && engine.tokens?.adapters) {
      allow(req, 'POST');
      const adapters = engine.tokens.adapters;
      const json = parseJson(await readBody(req, maxBody));
      const toHttp = (error: unknown) => {
        throw error instanceof UserError ? new HttpError(400, error.message) : error;
      };
      if (path === '/v1/load_lora_adapter') {
        const body = validated(loadLoraSchema, json);
        await adapters.load(body.lora_name, body.lora_path, body.load_inplace ?? false).catch(toHttp);
        return sendText(res, 200, `Success: LoRA adapter '${body.lora_name}' added successfully.`);
      }
      const body = validated(unloadLoraSchema, json);
      await adapters.unload(body.lora_name).catch(toHttp);
      return sendText(res, 200, `Success: LoRA adapter '${body.lora_name}' removed successfully.`);
    }
    throw new HttpError(404, `no route ${req.method} ${path} (try POST /v1/chat/completions or GET /v1/models)`);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${host}:${address.port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/** The path of a request target ("/v1/models", also from the absolute form); a target that is not a URL is a 400. */
function routeOf(target: string | undefined): string {
  let url: URL;
  try {
    url = new URL(target ?? '/', 'http://localhost');
  } catch {
    throw new HttpError(400, `malformed request target ${JSON.stringify((target ?? '').slice(0, 80))}`);
  }
  return url.pathname.replace(/\/+$/, '') || '/';
}

/** Characters of text in all messages (images not counted). */
function promptChars(messages: ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') n += m.content.length;
    else for (const part of m.content) if (part.type === 'text') n += part.text.length;
  }
  return n;
}

function allow(req: IncomingMessage, method: string): void {
  if (req.method !== method) throw new HttpError(405, `${req.method} not allowed here (use ${method})`);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // A declared length over the limit is refused before any byte is read (and without waiting for them).
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      reject(new HttpError(413, `request body over ${Math.round(limit / 1024 / 1024)} MB`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        reject(new HttpError(413, `request body over ${Math.round(limit / 1024 / 1024)} MB`));
        req.resume(); // drain the rest so the 413 can be delivered
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => !failed && resolve(Buffer.concat(chunks)));
    req.on('error', (e) => !failed && reject(new HttpError(400, `could not read the request body: ${e.message}`)));
  });
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

function validated<T>(schema: z.ZodType<T>, json: unknown): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue?.path.join('.') || null;
    throw new HttpError(400, `${param ?? 'body'}: ${issue?.message ?? 'invalid request'}`, param);
  }
  return parsed.data;
}

function parseRequest(body: Buffer): ChatRequest {
  return validated(chatRequestSchema, parseJson(body));
}

/** A signal that fires when the client hangs up before its answer is complete. */
function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** POST /v1/chat/completions with stream: true (chat-stream.ts). */
async function streamChat(
  res: ServerResponse,
  engine: ChatEngine,
  messages: ChatMessage[],
  sampling: EngineSampling,
  includeUsage: boolean,
  served: () => string,
): Promise<void> {
  let stream: ReturnType<typeof startChatStream> | null = null;
  const open = () =>
    (stream ??= startChatStream(res, {
      id: `chatcmpl-${randomUUID()}`,
      model: served(),
      n: sampling.n,
      includeUsage,
    }));
  try {
    // The first event goes out with the first decoding round: a request refused before (a prompt too long, a full
    // queue) still gets its status and JSON error.
    const result = await engine.complete(messages, { ...sampling, onProgress: (choices) => open().progress(choices) });
    const s = open();
    s.progress(result.choices.map((c) => ({ text: c.text, finishReason: c.finishReason })));
    s.finish({
      promptTokens: result.promptTokens,
      completionTokens: result.choices.reduce((sum, c) => sum + c.completionTokens, 0),
    });
  } catch (error) {
    if (stream === null || error instanceof ClientGone) throw httpErrorOf(error);
    const failure = httpErrorOf(error);
    const http = failure instanceof HttpError ? failure : new HttpError(500, 'internal error while generating');
    (stream as ReturnType<typeof startChatStream>).fail(http.message, http.type);
  }
}

/** POST /v1/completions in vLLM's shape (completions.ts). */
async function tokenCompletions(
  engine: ChatEngine,
  tokens: TokenEngine,
  body: Buffer,
  maxRequestTokens: number,
  signal: AbortSignal,
): Promise<object> {
  const request = validated(completionRequestSchema, parseJson(body));
  if (request.stream)
    throw new HttpError(
      400,
      'stream: /v1/completions is not streamed by metrl serve; send stream: false (/v1/chat/completions streams)',
      'stream',
    );
  const prompts =
    typeof request.prompt === 'string'
      ? [tokens.encodeText(request.prompt)]
      : Array.isArray(request.prompt[0])
        ? (request.prompt as number[][])
        : [request.prompt as number[]];
  const maxTokens = request.max_tokens ?? 16; // vLLM's default for /v1/completions
  const sampling: EngineSampling = {
    temperature: request.temperature ?? 1,
    topP: request.top_p ?? 1,
    truncation: truncationOf(request),
    maxTokens,
    n: request.n ?? 1,
    seed: request.seed ?? null,
    stop: stopsOf(request.stop),
    topLogprobs: request.logprobs ?? 0,
    signal,
  };
  checkWork(sampling, engine, maxRequestTokens * Math.max(1, prompts.length), prompts.length);
  const choices = await tokens.completeTokens(prompts, sampling).catch((error: unknown) => {
    throw httpErrorOf(error);
  });
  return completionResponse(tokens.servedModel(), prompts, choices, {
    logprobs: request.logprobs !== undefined && request.logprobs !== null,
    returnTokenIds: request.return_token_ids === true,
    id: `cmpl-${randomUUID()}`,
  });
}

/** POST /v1/chat/completions with logprobs / return_token_ids (chat-token-ids.ts): log-probs, the rollout client's image prompts. */
async function chatWithTokenIds(
  engine: ChatEngine,
  request: ChatRequest,
  messages: ChatMessage[],
  sampling: EngineSampling,
): Promise<object> {
  if (!engine.tokens)
    throw new HttpError(400, 'logprobs and return_token_ids are not served by this engine', 'logprobs');
  const tokens = engine.tokens;
  const { prompt, choices } = await tokens.completeChat(messages, sampling).catch((error: unknown) => {
    throw httpErrorOf(error);
  });
  return chatTokenResponse(tokens.servedModel(), prompt, choices, {
    logprobs: request.logprobs === true,
    returnTokenIds: request.return_token_ids === true,
    id: `chatcmpl-${randomUUID()}`,
    tokenText: tokens.tokenText,
  });
}

/** Validated request messages in the project's chat form; images must be inline data URLs (nothing is fetched). */
function toChatMessages(request: ChatRequest): ChatMessage[] {
  return request.messages.map((m, i) => {
    // OpenAI's developer role is its newer name for the system role.
    const role = m.role === 'developer' ? 'system' : m.role;
    if (typeof m.content === 'string' || m.content === null) return { role, content: m.content ?? '' };
    return {
      role,
      content: m.content.map((p, j) => {
        if (p.type === 'text') return { type: 'text' as const, text: p.text };
        const url = typeof p.image_url === 'string' ? p.image_url : p.image_url.url;
        const param = `messages.${i}.content.${j}.image_url`;
        if (!isImageDataUrl(url))
          throw new HttpError(
            400,
            `${param}: only base64 image data URLs are accepted (data:image/png;base64,…)`,
            param,
          );
        return { type: 'image_url' as const, image_url: { url } };
      }),
    };
  });
}

/** vLLM's top_k (−1 or 0: off) and min_p (0: off) as SamplingOptions. */
function truncationOf(request: {
  top_k?: number | null;
  min_p?: number | null;
}): Pick<SamplingOptions, 'topK' | 'minP'> {
  return {
    ...(request.top_k && request.top_k > 0 ? { topK: request.top_k } : {}),
    ...(request.min_p ? { minP: request.min_p } : {}),
  };
}

function samplingOf(
  request: ChatRequest,
  engine: ChatEngine,
  maxRequestTokens: number,
  signal: AbortSignal,
): EngineSampling {
  const sampling: EngineSampling = {
    temperature: request.temperature ?? 1,
    topP: request.top_p ?? 1,
    truncation: truncationOf(request),
    maxTokens: request.max_completion_tokens ?? request.max_tokens ?? engine.defaultMaxTokens,
    n: request.n ?? 1,
    seed: request.seed ?? null,
    stop: stopsOf(request.stop),
    topLogprobs: request.logprobs === true ? (request.top_logprobs ?? 0) : 0,
    signal,
  };
  checkWork(
    sampling,
    engine,
    maxRequestTokens,
    1,
    request.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
  );
  return sampling;
}

/** A request's length against the model's context, and its n × max_tokens (for every prompt) against the bound. */
function checkWork(
  sampling: EngineSampling,
  engine: ChatEngine,
  bound: number,
  prompts: number,
  field = 'max_tokens',
): void {
  if (sampling.maxTokens > engine.maxTokensLimit)
    throw new HttpError(400, `${field}: at most ${engine.maxTokensLimit} for this model`, field);
  const work = sampling.n * sampling.maxTokens * prompts;
  if (work > bound)
    throw new HttpError(
      400,
      `${field}: n × ${field}${prompts > 1 ? ' × prompts' : ''} is ${work} tokens, more than one request may ask of this server (${bound}); ask for fewer, or start it with a larger --max-request-tokens`,
      field,
    );
}

/** `stop` as a list. */
function stopsOf(stop: string | string[] | null | undefined): string[] {
  return stop == null ? [] : typeof stop === 'string' ? [stop] : stop;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, error: HttpError): void {
  if (error.retryAfter !== null && !res.headersSent) res.setHeader('retry-after', String(error.retryAfter));
  sendJson(res, error.status, { error: { message: error.message, type: error.type, param: error.param, code: null } });
}
