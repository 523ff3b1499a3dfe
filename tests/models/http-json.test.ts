// One bounded HTTP exchange with a rollout server (models/remote/http-json.ts), against real HTTP servers on 127.0.0.1:
// a connection the server closes before answering is sent once more on a fresh connection (a kept-alive connection
// closed by the server's idle timer as the next request arrives); a second close is ServerDown, named by its cause.
import { afterAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { postJson, ServerDown } from '../../models/remote/http-json.ts';

const servers: Server[] = [];
afterAll(() => servers.forEach((s) => s.close()));

/** A server that drops the connection of its first `drops` requests without answering, then answers {"ok": n}. */
async function dropping(drops: number): Promise<{ url: string; requests: () => number }> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      if (n <= drops) req.socket.destroy();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: n }));
    });
  }).listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((done) => server.once('listening', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/generate`, requests: () => n };
}

describe('postJson', () => {
  it('sends a request once more when the server closed the connection without answering', async () => {
    const server = await dropping(1);
    expect(await postJson(server.url, { a: 1 }, 5_000)).toEqual({ status: 200, text: '{"ok":2}' });
    expect(server.requests()).toBe(2);
  });

  it('a second close is ServerDown, and nothing is sent a third time', async () => {
    const server = await dropping(2);
    const error = await postJson(server.url, { a: 1 }, 5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerDown);
    expect((error as Error).message).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/generate: (UND_ERR_SOCKET|ECONNRESET)$/);
    expect(server.requests()).toBe(2);
  });
});
