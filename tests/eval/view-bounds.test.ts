// `metrl view` under load, in process on 127.0.0.1: clients that keep reconnecting with half-sent requests do not lock
// normal requests out (it shares serve's connection limiter, eval/connection-limit.ts), and a samples.jsonl of
// 40,000 rows is paged from its index (eval/view/jsonl-index.ts): newest step first, in the order written, filters
// counted over every row, rows appended since the last page appear on the next, and a file rewritten shorter is read
// again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { scratchDir } from '../cli/helpers.ts';
import { openFolder } from '../../eval/view/run-folder.ts';
import { startViewServer, type RunningView } from '../../eval/view/server.ts';
import { chessRun } from './view-fixtures.ts';

let root = '';
let samples = '';
let view: RunningView;
const ROWS = 40_000;
const STEPS = 200;

/** Row i of the big file: step 1 + i mod STEPS, every fourth exact, a filler of half a kilobyte. */
const row = (i: number, episode: string) =>
  `${JSON.stringify({
    step: 1 + (i % STEPS),
    episode,
    target: 't',
    completion: `row ${i} ${'x'.repeat(500)}`,
    reward: i % 4 === 0 ? 1 : 0,
    valid: true,
  })}\n`;

let episode = '';

beforeAll(async () => {
  root = scratchDir('view-bounds');
  const run = await chessRun(join(root, 'run'));
  samples = join(run.dir, 'samples.jsonl');
  episode = JSON.parse((await import('node:fs')).readFileSync(samples, 'utf8').split('\n')[0]).episode;
  const lines: string[] = [];
  for (let i = 0; i < ROWS; i++) lines.push(row(i, episode));
  writeFileSync(samples, lines.join(''));
  view = await startViewServer([openFolder(run.dir, 0)], { port: 0 });
});

afterAll(async () => {
  await view?.close();
  rmSync(root, { recursive: true, force: true });
});

const get = async (path: string) => {
  const response = await fetch(new URL(path, view.url), { signal: AbortSignal.timeout(30_000) });
  return { status: response.status, body: await response.json() };
};

/** A GET on a fresh connection; its status, or 0 when the connection failed. */
function probe(port: number): Promise<number> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET /api/folders HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`),
    );
    let received = '';
    socket.on('data', (d) => (received += d.toString('utf8')));
    socket.on('close', () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)));
    socket.on('error', () => done(0));
  });
}

describe('metrl view', () => {
  it('answers normal requests while 64 slow clients keep reconnecting', async () => {
    const port = Number(new URL(view.url).port);
    let budget = 400; // connections the slow clients may open in all
    let stopping = false;
    const slow = new Set<Socket>();
    const slowClient = () => {
      if (stopping || budget-- <= 0) return;
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /api/folders HT'));
      slow.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        slow.delete(socket);
        slowClient();
      });
    };
    for (let i = 0; i < 64; i++) slowClient();
    await new Promise((done) => setTimeout(done, 200));
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push(await probe(port));
    stopping = true;
    for (const s of slow) s.destroy();
    expect(statuses).toEqual(new Array(20).fill(200));
  });

  it('pages a big samples.jsonl newest step first, filters over every row, and follows appends', async () => {
    const first = await get('/api/folders/0/samples?limit=5');
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(ROWS);
    expect(first.body.groups).toHaveLength(STEPS);
    expect(first.body.groups[0]).toBe(String(STEPS));
    // Step 200 is rows 199, 399, …: the first page holds its first five, in the order written.
    expect(first.body.rows.map((r: { completion: string }) => r.completion.split(' ')[1])).toEqual([
      '199',
      '399',
      '599',
      '799',
      '999',
    ]);
    const exact = await get('/api/folders/0/samples?reward=exact&group=5&limit=200');
    // Step 5 is rows 4, 204, 404, …: 200 rows, every one with i mod 4 = 0 exact.
    expect(exact.body.total).toBe(ROWS / STEPS);
    const later = await get(`/api/folders/0/samples?group=${STEPS}&offset=195&limit=10`);
    expect(later.body.rows).toHaveLength(5);
    expect(later.body.rows.at(-1).completion.split(' ')[1]).toBe(String(ROWS - 1));

    appendFileSync(samples, row(ROWS, episode).replace('"step":1,', `"step":${STEPS + 1},`));
    const appended = await get('/api/folders/0/samples?limit=1');
    expect(appended.body.total).toBe(ROWS + 1);
    expect(appended.body.groups[0]).toBe(String(STEPS + 1));
    expect(appended.body.rows[0].completion.split(' ')[1]).toBe(String(ROWS));

    writeFileSync(samples, row(7, episode));
    const rewritten = await get('/api/folders/0/samples');
    expect(rewritten.body.total).toBe(1);
    expect(rewritten.body.rows[0].completion.split(' ')[1]).toBe('7');
  });
});
