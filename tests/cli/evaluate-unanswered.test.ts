// `metrl evaluate --endpoint` when the endpoint does not answer, through the real binary. A server that accepts and
// never replies: every item times out, and the run is a partial result (exit 1, the report written, one
// `metrl: error:` line saying how many items were not answered and how to retry them). Nobody listening (connection
// refused), or a port fetch refuses: found before anything is printed or written (eval/endpoint-preflight.ts), one
// line, exit 2, and no run folder left behind.
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
});

/** A server on 127.0.0.1 that accepts connections and never writes a byte; at most `max` connections. */
async function silentServer(max = 16): Promise<string> {
  const server = createServer((socket) => {
    sockets.push(socket);
    if (sockets.length > max) socket.destroy();
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
}

/** A port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as { port: number }).port;
  await new Promise((done) => server.close(done));
  return port;
}

const args = (url: string, out: string) => [
  'evaluate',
  '--model',
  'm',
  '--endpoint',
  url,
  '--domain',
  'shell',
  '--actions',
  '4',
  '--n',
  '2',
  '--timeout',
  '0.3',
  '--retries',
  '0',
  '--quiet',
  '--out',
  out,
];

describe('metrl evaluate against an endpoint that does not answer', () => {
  it('a server that never replies: a partial result, exit 1 and one error line', async () => {
    const out = join(scratchDir('eval-silent'), 'run');
    const result = await metrl(args(await silentServer(), out));
    const lines = result.stderr.split('\n').filter((l) => l !== '');
    expect(result.code).toBe(1);
    expect(lines).toEqual([
      `metrl: error: 2 of 2 items could not be answered after their retries (first: timed out after 0.3s (gave up after 1 attempts)); the 0 answered are scored in ${out}; rerun with --resume --out ${out} to retry the others`,
    ]);
    expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).settings[0].errors).toBe(2);
  }, 30_000);

  it('nobody listening: one line, exit 2, and no run folder left', async () => {
    const root = scratchDir('eval-refused');
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const out = join(root, 'new', 'run');
    expectUserError(
      await metrl(args(url, out)),
      /^metrl: error: --endpoint http:\/\/127\.0\.0\.1:\d+\/v1: nothing answers there \(ECONNREFUSED\); start the server, or correct the URL$/,
    );
    expect(existsSync(join(root, 'new'))).toBe(false);
    // An --out that was there (empty) stays, empty.
    const empty = join(root, 'empty');
    mkdirSync(empty);
    expectUserError(await metrl(args(url, empty)), /nothing answers there/);
    expect(readdirSync(empty)).toEqual([]);
    // Without --quiet too: no progress line comes before the error.
    const loud = (u: string) => args(u, join(root, 'loud')).filter((a) => a !== '--quiet');
    expectUserError(await metrl(loud(url)), /nothing answers there \(ECONNREFUSED\)/);
    expectUserError(
      await metrl(loud('http://127.0.0.1:9/v1')),
      /--endpoint http:\/\/127\.0\.0\.1:9\/v1: port 9 is one that fetch refuses to connect to/,
    );
    expect(existsSync(join(root, 'loud'))).toBe(false);
  }, 30_000);
});
