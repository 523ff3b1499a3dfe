// `metrl view`'s server in process: its API over a chess run (prompts rebuilt, images rendered, the board diff),
// filters, an evaluation folder, bad files (a torn last line, a bad line, a run deleted while viewed), and that no
// request reads outside the folders given (`..`, %2e%2e, encoded slashes, a symbolic link out), on 127.0.0.1 only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import sharp from 'sharp';
import { scratchDir } from '../cli/helpers.ts';
import { fakeRun } from '../cli/fake-run.ts';
import { openFolder } from '../../eval/view/run-folder.ts';
import { startViewServer, type RunningView } from '../../eval/view/server.ts';
import { chessRun, type ChessRun } from './view-fixtures.ts';

/** GET with the path sent as written (fetch would normalise `..` away before the server saw it). */
function rawGet(url: string, path: string, host?: string): Promise<{ status: number; body: Buffer; type: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((done, fail) => {
    const req = request({ hostname, port, path, method: 'GET', headers: host ? { host } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), type: String(res.headers['content-type']) }),
      );
    });
    req.on('error', fail);
    req.end();
  });
}
const json = async (url: string, path: string) => {
  const r = await rawGet(url, path);
  return { status: r.status, body: JSON.parse(r.body.toString('utf8')) };
};

describe('metrl view server', () => {
  let root: string;
  let chess: ChessRun;
  let view: RunningView;
  let secret: string;

  beforeAll(async () => {
    root = scratchDir('view');
    chess = await chessRun(join(root, 'chess-run'));
    fakeRun(join(root, 'shell-run'), 'shell', 'text', 0.03);
    // Outside every folder given: what no request may read.
    secret = join(root, 'secret.txt');
    writeFileSync(secret, 'do not serve');
    symlinkSync(secret, join(chess.dir, 'link-out.txt'));
    const folders = [openFolder(chess.dir, 0), openFolder(join(root, 'shell-run'), 1)];
    view = await startViewServer(folders, { port: 0 });
  });
  afterAll(async () => {
    await view?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('listens on 127.0.0.1 and serves the page, vega and vega-lite locally', async () => {
    expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await rawGet(view.url, '/');
    expect(page.status).toBe(200);
    expect(page.body.toString()).toContain('/vendor/vega-lite.min.js');
    for (const path of ['/app.js', '/style.css', '/vendor/vega.min.js', '/vendor/vega-lite.min.js'])
      expect((await rawGet(view.url, path)).status, path).toBe(200);
  });

  it('lists the chess samples with their prompts, parsed answers and the board diff', async () => {
    const { status, body } = await json(view.url, '/api/folders/0/samples');
    expect(status).toBe(200);
    expect(body.groupKind).toBe('step');
    expect(body.groups).toEqual(['2', '1']); // newest step first
    expect(body.total).toBe(3);
    const [partial, exact, invalid] = body.rows;
    expect(partial.board.right).toBe(64 - chess.wrongSquares);
    expect(partial.board.wrong.filter(Boolean)).toHaveLength(chess.wrongSquares);
    expect(exact.board.right).toBe(64);
    expect(invalid.valid).toBe(false);
    expect(invalid.board.predicted).toBeNull();
    // The compact prompt the built-in model read: one image per action.
    const images = partial.prompt.filter((p: { type: string }) => p.type === 'image');
    expect(images.map((p: { action: number }) => p.action)).toEqual([...Array(chess.actions).keys()]);
    const png = await rawGet(view.url, `/api/folders/0/image?e=${encodeURIComponent(partial.episodeKey)}&a=1`);
    expect(png.type).toBe('image/png');
    expect((await sharp(png.body).metadata()).width).toBe(64);
  });

  it('filters by step, reward and modality', async () => {
    expect((await json(view.url, '/api/folders/0/samples?group=1')).body.total).toBe(2);
    expect((await json(view.url, '/api/folders/0/samples?reward=partial')).body.total).toBe(1);
    expect((await json(view.url, '/api/folders/0/samples?reward=invalid')).body.total).toBe(1);
    expect((await json(view.url, '/api/folders/0/samples?reward=exact')).body.total).toBe(1);
    expect((await json(view.url, '/api/folders/0/samples?modality=text')).body.total).toBe(0);
    expect((await json(view.url, '/api/folders/0/samples?reward=nonsense')).status).toBe(400);
  });

  it('draws the learning curves of both runs, and says what a folder lacks', async () => {
    const charts = (await json(view.url, '/api/charts')).body;
    const runs = new Set(charts.curves.vconcat[0].data.values.map((v: { run: string }) => v.run));
    expect(runs.size).toBe(2);
    const folders = (await json(view.url, '/api/folders')).body;
    expect(folders[0].lacks).toEqual([]);
    expect(folders[1].lacks.join(' ')).toMatch(/no samples\.jsonl yet/);
  });

  it('leaves out a torn last line quietly and names a bad line, without failing', async () => {
    appendFileSync(join(chess.dir, 'samples.jsonl'), '{"step":3,"episode":"x","tar');
    let page = (await json(view.url, '/api/folders/0/samples')).body;
    expect(page.total).toBe(3);
    expect(page.problems).toEqual([]);
    appendFileSync(join(chess.dir, 'samples.jsonl'), '\n{"step":4}\n');
    page = (await json(view.url, '/api/folders/0/samples')).body;
    expect(page.total).toBe(3);
    expect(page.problems.join(' ')).toMatch(/samples\.jsonl:4: not valid JSON/);
    expect(page.problems.join(' ')).toMatch(/samples\.jsonl:5: not a sample row/);
  });

  it("serves a folder's own files and refuses every path out of it", async () => {
    expect((await rawGet(view.url, '/runs/0/config.json')).status).toBe(200);
    const outside = [
      '/runs/0/../secret.txt',
      '/runs/0/..%2fsecret.txt',
      '/runs/0/%2e%2e/secret.txt',
      '/runs/0/%2E%2E%2Fsecret.txt',
      '/runs/0/checkpoints/../../secret.txt',
      `/runs/0/${encodeURIComponent(secret)}`,
      '/runs/0/link-out.txt',
      '/runs/1/../chess-run/config.json',
      '/runs/0/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    ];
    for (const path of outside) {
      const res = await rawGet(view.url, path);
      expect(res.status, path).toBe(403);
      expect(res.body.toString(), path).not.toContain('do not serve');
    }
    expect((await rawGet(view.url, '/runs/7/config.json')).status).toBe(404);
    expect((await rawGet(view.url, '/../../etc/passwd')).status).toBe(404);
  });

  it('refuses other Host headers and methods other than GET', async () => {
    expect((await rawGet(view.url, '/api/folders', 'evil.example:80')).status).toBe(403);
    const { hostname, port } = new URL(view.url);
    const status = await new Promise<number>((done) =>
      request(
        { hostname, port, path: '/api/folders', method: 'POST' },
        (res) => (res.resume(), done(res.statusCode ?? 0)),
      ).end(),
    );
    expect(status).toBe(405);
  });

  it('says a run was deleted while viewed, and keeps serving', async () => {
    rmSync(join(root, 'shell-run'), { recursive: true });
    const folders = (await json(view.url, '/api/folders')).body;
    expect(folders[1].stamp).toBe('gone');
    expect(folders[1].lacks[0]).toMatch(/no longer exists/);
    expect((await json(view.url, '/api/folders/1/samples')).status).toBe(404);
    const charts = await json(view.url, '/api/charts');
    expect(charts.status).toBe(200);
    expect(new Set(charts.body.curves.vconcat[0].data.values.map((v: { run: string }) => v.run)).size).toBe(1);
  });
});
