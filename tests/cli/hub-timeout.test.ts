// `--dataset hf://…` against a Hub that accepts the connection and then stalls, through the real binary: before the
// answer, or in the middle of a body. Node's fetch alone waits 300 s for headers and for ever for a body; the download
// is bounded by HF_HUB_DOWNLOAD_TIMEOUT (seconds; 0.5 here) and fails with one line and exit 2, nothing written.
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';

const servers: Server[] = [];
const stalled: ServerResponse[] = [];
afterEach(async () => {
  for (const r of stalled.splice(0)) r.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
});

/** A Hub on 127.0.0.1 that never answers (`body: false`), or sends the headers and half a listing, then nothing. */
async function stallingHub(body: boolean): Promise<string> {
  let requests = 0;
  const server = createServer((_req, res) => {
    if (++requests > 8) return res.destroy(); // a bounded number of requests: a retry loop cannot run away
    stalled.push(res);
    if (body) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('[{"type":"file","path":"full/te');
    }
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

async function evaluateFrom(hub: string) {
  const root = scratchDir('hub-timeout');
  const out = join(root, 'out');
  const env = {
    HF_HUB_CACHE: join(root, 'cache'),
    HF_ENDPOINT: hub,
    HF_HUB_OFFLINE: '',
    HF_HUB_DOWNLOAD_TIMEOUT: '0.5',
  };
  const result = await metrl(
    [
      'evaluate',
      '--model',
      'baseline:game-start',
      '--dataset',
      'hf://vanyacohen/MET-Bench-Shell',
      '--out',
      out,
      '--quiet',
    ],
    { env },
  );
  expect(existsSync(out)).toBe(false);
  return result;
}

describe('metrl evaluate --dataset hf:// from a Hub that stalls', () => {
  it('no answer: one line naming the host and the limit, exit 2', async () => {
    const hub = await stallingHub(false);
    expectUserError(
      await evaluateFrom(hub),
      new RegExp(
        `hf://vanyacohen/MET-Bench-Shell: cannot download: ${new URL(hub).host} sent no answer within 0\\.5 s \\(HF_HUB_DOWNLOAD_TIMEOUT=0\\.5\\)$`,
      ),
    );
  }, 30_000);

  it('a body that stops half-way: one line, exit 2', async () => {
    expectUserError(await evaluateFrom(await stallingHub(true)), /cannot download: .* sent nothing more within 0\.5 s/);
  }, 30_000);

  it('a limit that is not a number is one line', async () => {
    const root = scratchDir('hub-timeout');
    const env = {
      HF_HUB_CACHE: join(root, 'cache'),
      HF_ENDPOINT: 'http://127.0.0.1:9',
      HF_HUB_OFFLINE: '',
      HF_HUB_DOWNLOAD_TIMEOUT: 'soon',
    };
    expectUserError(
      await metrl(
        ['evaluate', '--model', 'baseline:game-start', '--dataset', 'hf://vanyacohen/MET-Bench-Shell', '--quiet'],
        { env },
      ),
      /HF_HUB_DOWNLOAD_TIMEOUT: .*expected number/,
    );
  }, 30_000);
});
