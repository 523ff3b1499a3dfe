// A stand-in for the Hugging Face Hub on 127.0.0.1, serving one dataset folder at one commit with the endpoints
// @huggingface/hub uses to download into the cache: the tree listing, paths-info and resolve (with Range requests).
// It records each request's path and Authorization header, so a test can check the token is sent and nothing else.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

export interface FakeHub {
  url: string;
  requests: { method: string; path: string; authorization: string | null }[];
  close(): Promise<void>;
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** Serve `dir` as dataset `repo` at `commit` (also reachable as revision "main"). */
export async function startFakeHub(repo: string, commit: string, dir: string): Promise<FakeHub> {
  const requests: FakeHub['requests'] = [];
  const entries = files(dir).map((f) => {
    const bytes = readFileSync(f);
    return {
      path: relative(dir, f).split(sep).join('/'),
      bytes,
      oid: createHash('sha1').update(bytes).digest('hex'),
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
  });
  const revisionOk = (rev: string) => rev === commit || rev === 'main';
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push({ method: req.method ?? '', path: url.pathname, authorization: req.headers.authorization ?? null });
    const notFound = (code: string) => {
      res.writeHead(404, { 'X-Error-Code': code, 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: code }));
    };
    const api = new RegExp(`^/api/datasets/${repo}/(tree|paths-info)/([^/]+)`).exec(url.pathname);
    const resolve = new RegExp(`^/datasets/${repo}/resolve/([^/]+)/(.+)$`).exec(url.pathname);
    if (api) {
      if (!revisionOk(decodeURIComponent(api[2]))) return notFound('RevisionNotFound');
      const info = (e: (typeof entries)[number]) => ({
        type: 'file',
        path: e.path,
        oid: e.oid,
        size: e.bytes.length,
        lfs: { oid: e.sha256, size: e.bytes.length, pointerSize: 130 },
        lastCommit: { id: commit, title: 'data', date: '2026-01-01T00:00:00.000Z' },
      });
      if (api[1] === 'tree') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        return res.end(JSON.stringify(entries.map(info)));
      }
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const wanted = new Set((JSON.parse(body) as { paths: string[] }).paths);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(entries.filter((e) => wanted.has(e.path)).map(info)));
      });
      return;
    }
    if (resolve) {
      if (!revisionOk(decodeURIComponent(resolve[1]))) return notFound('RevisionNotFound');
      const entry = entries.find((e) => e.path === resolve[2]);
      if (!entry) return notFound('EntryNotFound');
      const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
      const headers = {
        ETag: `"${entry.sha256}"`,
        'Content-Type': 'application/octet-stream',
        'Accept-Ranges': 'bytes',
      };
      if (range) {
        const start = Number(range[1]);
        const end = range[2] === '' ? entry.bytes.length - 1 : Math.min(Number(range[2]), entry.bytes.length - 1);
        res.writeHead(206, {
          ...headers,
          'Content-Range': `bytes ${start}-${end}/${entry.bytes.length}`,
          'Content-Length': end - start + 1,
        });
        return res.end(entry.bytes.subarray(start, end + 1));
      }
      res.writeHead(200, { ...headers, 'Content-Length': entry.bytes.length });
      return res.end(entry.bytes);
    }
    notFound('RepoNotFound');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((done) => server.close(() => done())) };
}
