// metrl serve's HTTP side under abuse, with a stand-in engine (the server's own behaviour is what is tested): malformed
// request targets and huge prompts get a 400 JSON error, clients that stall their headers or body are disconnected at
// the configured deadlines, a connection beyond the bound takes a stalled one's slot (503 with Retry-After when every
// connection is being answered). Raw sockets, so nothing is normalised away.
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { startServer, type ChatEngine, type RunningServer, type ServeOptions } from '../../../eval/serve/server.ts';

const engine: ChatEngine = {
  modelId: 'stand-in',
  maxTokensLimit: 64,
  defaultMaxTokens: 8,
  async complete() {
    return { promptTokens: 3, choices: [{ text: 'ok', finishReason: 'stop', completionTokens: 1 }] };
  },
};

let running: RunningServer | null = null;
afterEach(async () => {
  running?.server.closeAllConnections();
  await running?.close();
  running = null;
});

async function start(options: Partial<ServeOptions> = {}): Promise<number> {
  running = await startServer(engine, { host: '127.0.0.1', port: 0, ...options });
  return Number(new URL(running.url).port);
}

/** Send raw bytes; resolve with everything the server sent before it closed the connection. */
function raw(port: number, data: string, endAfterWrite = false): Promise<string> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString('utf8')));
    socket.on('close', () => done(received));
    socket.on('error', (e) => (received === '' ? fail(e) : done(received)));
    socket.write(data);
    if (endAfterWrite) socket.end();
  });
}

const statusOf = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);

describe('metrl serve under abuse', () => {
  it.each(['//', 'http://[::1/v1/models', 'http://%zz/v1/models'])(
    'request target %s → 400, not 500',
    async (target) => {
      const port = await start();
      const response = await raw(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(statusOf(response)).toBe(400);
      expect(response).toContain('malformed request target');
    },
  );

  it('a prompt of 200,000 characters → 400 naming its size', async () => {
    const port = await start();
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(200_000) }] });
    const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /messages: 200000 characters of text/,
    );
  });

  it('a declared body over the size limit → 413 at once, without waiting for the bytes', async () => {
    const port = await start({ maxBodyBytes: 1024, requestTimeoutMs: 60_000, headersTimeoutMs: 60_000 });
    const response = await raw(
      port,
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\nConnection: close\r\n\r\n',
      true,
    );
    expect(statusOf(response)).toBe(413);
  });

  it('headers that never finish → disconnected at the header deadline', async () => {
    const port = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const response = await raw(port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n');
    expect(response === '' || statusOf(response) === 408).toBe(true);
  });

  it('a connection that sends nothing → disconnected at the header deadline', async () => {
    const port = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const response = await raw(port, '');
    expect(response === '' || statusOf(response) === 408).toBe(true);
  });

  it('a body that stalls → disconnected at the request deadline', async () => {
    const port = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const response = await raw(
      port,
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"messages":',
    );
    expect(response === '' || statusOf(response) === 408).toBe(true);
  });

  it('a connection beyond the bound takes the slot of a stalled one, and is answered', async () => {
    const port = await start({ maxConnections: 2, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
    const stalled = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
    await Promise.all(stalled.map((s) => new Promise((done) => s.once('connect', done))));
    const cut = Promise.race(stalled.map((s) => new Promise((done) => s.once('close', done))));
    await new Promise((done) => setTimeout(done, 50)); // let the server count them
    const extra = await raw(port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(statusOf(extra)).toBe(200);
    await cut; // the oldest stalled connection lost its slot
    stalled.forEach((s) => s.destroy());
  });

  it('slow-header clients that reconnect whenever cut do not lock normal clients out', async () => {
    const port = await start({ maxConnections: 8, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
    // Eight slow clients, each sending half a request line and reconnecting when closed; 200 connections at most.
    let budget = 200;
    const slow = new Set<ReturnType<typeof connect>>();
    let stopping = false;
    const slowClient = () => {
      if (stopping || budget-- <= 0) return;
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /health HT'));
      slow.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        slow.delete(socket);
        slowClient();
      });
    };
    for (let i = 0; i < 8; i++) slowClient();
    await new Promise((done) => setTimeout(done, 100));
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++)
      statuses.push(
        statusOf(await raw(port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').catch(() => '')),
      );
    stopping = true;
    slow.forEach((s) => s.destroy());
    expect(statuses).toEqual(new Array(20).fill(200));
  });

  it('when every connection is being answered, a new one gets 503 with Retry-After', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((done) => (release = done));
    const slowEngine: ChatEngine = { ...engine, complete: async (...args) => (await gate, engine.complete(...args)) };
    running = await startServer(slowEngine, { host: '127.0.0.1', port: 0, maxConnections: 2 });
    const port = Number(new URL(running.url).port);
    const body = JSON.stringify({ model: 'stand-in', messages: [{ role: 'user', content: 'hi' }] });
    const post = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    const answering = [raw(port, post), raw(port, post)];
    await new Promise((done) => setTimeout(done, 100)); // both requests are in the engine
    const busy = await raw(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(statusOf(busy)).toBe(503);
    expect(busy).toMatch(/\r\nRetry-After: 1\r\n/);
    release();
    expect((await Promise.all(answering)).map(statusOf)).toEqual([200, 200]);
  });
});
