// `metrl view`'s HTTP side, on node:http, bound to 127.0.0.1: the page (eval/view/page/), vega and vega-lite from
// node_modules, and a JSON API over the folders given (GET only). Folders are named by their position on the command
// line, never by a path; the one route that takes a path (a folder's own files, /runs/<i>/<path>) resolves it, symbolic
// links included, and refuses anything outside that folder. Requests from another Host are refused (no DNS
// rebinding), connections have bounded header, request and idle times and a bound on how many are open (serve's
// limiter: a slow client loses its slot to a newcomer, so reconnecting slow clients cannot lock normal ones out),
// and a failing request answers an error, never takes the server down. The page polls /api/folders for changes (one
// small request every few seconds).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReadStream, existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UserError } from '../../core/errors.ts';
import { limitConnections } from '../connection-limit.ts';
import { chartsView } from './charts.ts';
import { actionPng, episodeSource, imageSize, trainLayout, type Layout } from './episodes.ts';
import { fileStamp } from './jsonl-rows.ts';
import { lacks, type ViewedFolder } from './run-folder.ts';
import { REWARD_FILTERS, samplesPage, type RewardFilter } from './samples.ts';

export interface ViewServerOptions {
  /** 0 picks a free port. */
  port: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  maxConnections?: number;
  /** Largest folder file served by /runs/<i>/<path>. */
  maxFileBytes?: number;
  log?: (line: string) => void;
}

export interface RunningView {
  server: Server;
  url: string;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';
const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'page');
const PAGE_FILES: Record<string, string> = { '/': 'index.html', '/app.js': 'app.js', '/style.css': 'style.css' };
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.md': 'text/plain; charset=utf-8',
};
/** The page runs vega (which compiles its expressions, hence unsafe-eval) and fetches only from this server. */
const CSP =
  "default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A file of an installed package (vega's `exports` hide its browser build from require.resolve). */
function packageFile(name: string, file: string): string {
  const require = createRequire(import.meta.url);
  let dir = dirname(require.resolve(name));
  while (
    !existsSync(join(dir, 'package.json')) ||
    JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name !== name
  ) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the ${name} package`);
    dir = up;
  }
  return join(dir, file);
}

const VENDOR: Record<string, () => string> = {
  '/vendor/vega.min.js': () => packageFile('vega', 'build/vega.min.js'),
  '/vendor/vega-lite.min.js': () => packageFile('vega-lite', 'build/vega-lite.min.js'),
};

/** Everything a folder's page depends on, as one string that changes when any of it does. */
function folderStamp(folder: ViewedFolder): string {
  if (!existsSync(folder.root)) return 'gone';
  let names: string[] = [];
  try {
    names = readdirSync(folder.root)
      .filter((n) => /\.(jsonl|json)$/.test(n))
      .sort();
  } catch {
    return 'unreadable';
  }
  return names.map((n) => `${n}=${fileStamp(join(folder.root, n))}`).join(';');
}

function topFiles(folder: ViewedFolder): string[] {
  try {
    return readdirSync(folder.root, { withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

export async function startViewServer(folders: ViewedFolder[], options: ViewServerOptions): Promise<RunningView> {
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const requestTimeout = Math.max(headersTimeout, options.requestTimeoutMs ?? 30_000);
  const maxFileBytes = options.maxFileBytes ?? 256 * 1024 * 1024;
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 5_000,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, headersTimeout / 2)),
    },
    (req, res) => {
      if (connections.refused(req.socket)) return; // already told 503; the connection is closing
      handle(req, res).catch((error: unknown) => {
        const status = error instanceof HttpError ? error.status : 500;
        if (status >= 500)
          options.log?.(
            `view: ${req.method} ${req.url}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          );
        if (!res.headersSent)
          send(
            res,
            status,
            'application/json; charset=utf-8',
            JSON.stringify({ error: error instanceof Error ? error.message : String(error) }),
          );
        else res.destroy();
      });
    },
  );
  // Not server.maxConnections, which resets every connection over it: slow clients then hold every slot.
  const connections = limitConnections(server, options.maxConnections ?? 64);
  let port = 0;

  function folderAt(text: string): ViewedFolder {
    const folder = /^\d+$/.test(text) ? folders[Number(text)] : undefined;
    if (!folder) throw new HttpError(404, `no folder ${text} (this view shows ${folders.length})`);
    return folder;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      throw new HttpError(405, `${req.method} not allowed (the view is read-only)`);
    const host = req.headers.host ?? '';
    if (host !== `${HOST}:${port}` && host !== `localhost:${port}`)
      throw new HttpError(403, `Host ${JSON.stringify(host.slice(0, 80))} refused: open http://${HOST}:${port}/`);
    // The raw target, not a URL-normalised one: a path's `..` must reach the containment check, not vanish before it.
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : target.slice(q + 1));

    if (Object.hasOwn(PAGE_FILES, path)) return sendFile(res, join(PAGE_DIR, PAGE_FILES[path]));
    if (Object.hasOwn(VENDOR, path)) return sendFile(res, VENDOR[path](), 'public, max-age=3600');
    if (path === '/api/folders') {
      return sendJson(
        res,
        folders.map((f) => ({
          index: f.index,
          name: f.name,
          given: f.given,
          kind: f.kind,
          lacks: lacks(f),
          stamp: folderStamp(f),
          files: topFiles(f),
        })),
      );
    }
    if (path === '/api/charts') return sendJson(res, await chartsView(folders.filter((f) => existsSync(f.root))));
    let m = /^\/api\/folders\/(\d+)\/samples$/.exec(path);
    if (m) {
      const folder = folderAt(m[1]);
      if (!existsSync(folder.root))
        throw new HttpError(404, `${folder.given} no longer exists (deleted while viewed?)`);
      const reward = (query.get('reward') ?? 'all') as RewardFilter;
      if (!REWARD_FILTERS.includes(reward)) throw new HttpError(400, `reward: one of ${REWARD_FILTERS.join(', ')}`);
      const offset = Math.max(0, Number(query.get('offset') ?? 0) || 0);
      const limit = Math.min(200, Math.max(1, Number(query.get('limit') ?? 40) || 40));
      return sendJson(
        res,
        await samplesPage(folder, {
          group: query.get('group') ?? '',
          modality: query.get('modality') ?? '',
          reward,
          offset,
          limit,
        }),
      );
    }
    m = /^\/api\/folders\/(\d+)\/image$/.exec(path);
    if (m) {
      const folder = folderAt(m[1]);
      const key = query.get('e') ?? '';
      const action = Number(query.get('a'));
      const source = await episodeSource(folder);
      const episode = source.find(key);
      if (!episode) throw new HttpError(404, `no episode ${JSON.stringify(key.slice(0, 120))} in ${folder.name}`);
      if (!Number.isInteger(action) || action < 0 || action >= episode.actions.length)
        throw new HttpError(404, `episode ${episode.id} has no action ${query.get('a')}`);
      const env = await source.env(episode.domain);
      const layout: Layout =
        folder.kind === 'train' ? trainLayout(folder) : query.get('layout') === 'reference' ? 'reference' : 'compact';
      return send(
        res,
        200,
        'image/png',
        await actionPng(env, episode, action, imageSize(env, layout)),
        'public, max-age=3600',
      );
    }
    m = /^\/runs\/(\d+)\/(.+)$/.exec(path);
    if (m) return sendFile(res, containedPath(folderAt(m[1]), m[2]), 'no-cache', maxFileBytes);
    throw new HttpError(404, `nothing at ${path.slice(0, 120)}`);
  }

  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port, HOST, () => {
      server.off('error', fail);
      done();
    });
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE')
      throw new UserError(`--port ${options.port}: already in use on ${HOST} (pick another, or 0 for any free port)`);
    if (error.code === 'EACCES') throw new UserError(`--port ${options.port}: not allowed to bind it on ${HOST}`);
    throw error;
  });
  port = (server.address() as AddressInfo).port;
  return {
    server,
    url: `http://${HOST}:${port}/`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/**
 * The file `relative` (percent-encoded, '/'-separated) names inside the folder, or a 403 when it names anything
 * outside it: `..` segments (also encoded as %2e%2e), encoded slashes, absolute paths, and symbolic links out.
 */
function containedPath(folder: ViewedFolder, relative: string): string {
  let segments: string[];
  try {
    segments = relative.split('/').map((s) => decodeURIComponent(s));
  } catch {
    throw new HttpError(400, 'malformed percent-encoding in the path');
  }
  const outside = new HttpError(403, `refused: the path leaves ${folder.name}`);
  if (segments.some((s) => s === '..' || s === '.' || s.includes('/') || s.includes('\\') || s.includes('\0')))
    throw outside;
  const full = resolve(folder.root, ...segments);
  if (!full.startsWith(folder.root + sep)) throw outside;
  let real: string;
  try {
    real = realpathSync(full);
  } catch {
    throw new HttpError(404, `${folder.name} has no ${segments.join('/')}`);
  }
  if (!real.startsWith(folder.root + sep)) throw outside;
  return real;
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, cache = 'no-store'): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': cache,
    'x-content-type-options': 'nosniff',
    'content-security-policy': CSP,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

function sendJson(res: ServerResponse, value: unknown): void {
  send(res, 200, 'application/json; charset=utf-8', JSON.stringify(value));
}

function sendFile(res: ServerResponse, path: string, cache = 'no-cache', maxBytes = Infinity): Promise<void> {
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new HttpError(404, 'not a file');
    size = stat.size;
  } catch (error) {
    throw error instanceof HttpError ? error : new HttpError(404, 'no such file');
  }
  if (size > maxBytes) throw new HttpError(413, `file over ${Math.round(maxBytes / 1024 / 1024)} MB`);
  res.writeHead(200, {
    'content-type': TYPES[extname(path)] ?? 'text/plain; charset=utf-8',
    'content-length': size,
    'cache-control': cache,
    'x-content-type-options': 'nosniff',
    'content-security-policy': CSP,
  });
  if (res.req.method === 'HEAD') {
    res.end();
    return Promise.resolve();
  }
  return new Promise((done) => {
    const stream = createReadStream(path);
    stream.on('error', () => {
      res.destroy();
      done();
    });
    stream.on('end', done);
    stream.pipe(res);
  });
}
