// One bounded HTTP exchange with a rollout server (models/remote/http-json.ts), against real HTTP servers on 127.0.0.1:
// a connection the server closes before answering is sent once more on a fresh connection (a kept-alive connection
// closed by the server's idle timer as the next request arrives); a second close is ServerDown, named by its cause.
// An answer past the caller's size bound (a server that streams a 200 answer without end, or declares a huge length)
// is AnswerTooLarge, and the read stops there: the connection is cancelled.
import { afterAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnswerTooLarge, postJson, ServerDown } from '../../models/remote/http-json.ts';

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

  it('gives up an answer that goes on past the size bound, and closes the connection', async () => {
    let closed = false;
    let sent = 0;
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const pump = () => {
        while (!closed && sent < 512 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
        if (!closed) res.once('drain', pump);
      };
      res.on('close', () => (closed = true));
      pump();
    }).listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((done) => server.once('listening', done));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/completions`;
    const error = await postJson(url, {}, 20_000, 1024 * 1024).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnswerTooLarge);
    expect((error as Error).message).toMatch(
      /\/v1\/completions: the answer is over 1 MB, more than this request can need$/,
    );
    await new Promise((done) => setTimeout(done, 200));
    expect(closed).toBe(true);
    // Well short of the 512 MB the server would have sent: the read stopped at the bound (plus what was in flight).
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });

  it('refuses a declared length past the bound without reading it', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 ** 40) });
      res.write('{');
    }).listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((done) => server.once('listening', done));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/generate`;
    await expect(postJson(url, {}, 5_000, 1024)).rejects.toBeInstanceOf(AnswerTooLarge);
    server.closeAllConnections();
  });
});
