// Test helper: a stand-in vLLM server on 127.0.0.1 for the rollout client's bad-input tests. By default it answers as
// a healthy vLLM with runtime LoRA does: GET /v1/models lists one model, POST /v1/load_lora_adapter loads (an empty
// body: 400, as vLLM's validation), POST /v1/completions and /v1/chat/completions give n choices of up to two tokens
// (ids 50, 51) within max_tokens, with log-probs. A test replaces the answer of one route to break exactly that.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubAnswer {
  status: number;
  /** JSON (an object) or plain text (a string). */
  body: unknown;
}

/** A route's answer from the request's path and JSON body (null for a GET). */
export type StubRoute = (request: Record<string, any> | null, path: string) => StubAnswer | 'hang-up';

const servers: Server[] = [];

/** Close every stub started so far (call in afterAll). */
export function closeRolloutStubs(): void {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
}

export function healthyCompletions(request: Record<string, any> | null): StubAnswer {
  const n = request?.n ?? 1;
  const tokens = [50, 51].slice(0, Math.max(1, Math.min(2, request?.max_tokens ?? 2)));
  return {
    status: 200,
    body: {
      object: 'text_completion',
      model: request?.model ?? 'stub',
      choices: Array.from({ length: n }, (_, index) => ({
        index,
        text: 'ab'.slice(0, tokens.length),
        logprobs: { token_logprobs: tokens.map(() => -0.5) },
        finish_reason: 'length',
        token_ids: tokens,
      })),
    },
  };
}

function send(res: ServerResponse, { status, body }: StubAnswer): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' }).end(text);
}

/** Start a stub; `routes` replace the healthy answers by path suffix ("/v1/models", "load_lora_adapter", …). */
export async function rolloutStub(routes: Record<string, StubRoute> = {}): Promise<string> {
  const healthy: Record<string, StubRoute> = {
    '/v1/models': () => ({ status: 200, body: { object: 'list', data: [{ id: 'stub', object: 'model' }] } }),
    load_lora_adapter: (request) =>
      request?.lora_name
        ? { status: 200, body: `Success: LoRA adapter '${request.lora_name}' added successfully.` }
        : { status: 400, body: { message: 'lora_name and lora_path must be provided' } },
    '/v1/completions': healthyCompletions,
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      let request: Record<string, any> | null = null;
      if (chunks.length > 0) request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const route = Object.entries({ ...healthy, ...routes }).find(([suffix]) => path.endsWith(suffix))?.[1];
      const answer = route ? route(request, path) : { status: 404, body: { detail: 'Not Found' } };
      if (answer === 'hang-up') req.socket.destroy();
      else send(res, answer);
    });
  }).listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((done) => server.once('listening', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}
