// An upstream that echoes the Authorization header in its error texts must not get the key into anything metrl stores
// or prints: rows' error fields, summary files, stderr. Through the real binary against a local HTTP server.
import { afterAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir } from './helpers.ts';

const KEY = 'sk-test-0123456789abcdef';

/** Answers every request with `status` and an error text quoting the request's Authorization header. */
async function echoingUpstream(status: number): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            message: `rejected request with Authorization: ${req.headers.authorization ?? ''} (key ${KEY.slice(3)})`,
          },
        }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

const servers: Server[] = [];
afterAll(() => servers.forEach((s) => s.close()));

/** Every file under `dir` ('' when nothing was written: a fatal stop before any answer leaves no run folder). */
function everythingWritten(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'))
    .join('\n');
}

describe.concurrent('secrets', () => {
  it.each([
    ['500 (retries spent): per-item errors stored in rows', 500],
    ['400: the fatal stop printed on stderr', 400],
    ['401: the fatal stop printed on stderr', 401],
  ])('%s never carry the key', async (_name, status) => {
    const upstream = await echoingUpstream(status);
    servers.push(upstream.server);
    const out = join(scratchDir('secrets'), 'run');
    const result = await metrl(
      [
        'evaluate',
        '--model',
        'm',
        '--endpoint',
        upstream.url,
        '--api-key-env',
        'METRL_TEST_KEY',
        '--domain',
        'shell',
        '--n',
        '2',
        '--retries',
        '0',
        '--quiet',
        '--out',
        out,
      ],
      { env: { METRL_TEST_KEY: KEY } },
    );
    expect(result.code).toBe(status === 500 ? 1 : 2);
    const written = everythingWritten(out);
    expect(written + result.stderr + result.stdout).not.toContain(KEY);
    expect(written + result.stderr).toContain('[redacted]');
  });
});
