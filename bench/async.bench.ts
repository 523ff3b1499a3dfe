// `npm run bench -- async`: GRPO steps on two `metrl serve --enable-lora` replicas on 127.0.0.1, synchronous against
// `--async --max-staleness 1` (docs/rollout-servers.md#asynchronous-grpo---async): the default training config on
// the shell game, text actions by default (METRL_BENCH_MODALITY=image for image actions; METRL_BENCH_STEPS steps,
// default 6, the first not counted; METRL_BENCH_THREADS ONNX Runtime threads in every process, default every core),
// from checkpoints/base. Each `metrl train` runs as a child process; in front of each replica this process keeps a
// forwarding proxy that notes when a request is in flight, and it notes when each step's row reaches metrics.jsonl.
// The window is the measured steps (from the first step's row to the last's): wall seconds per step over it, and
// each replica's idle fraction, the share of it in which the replica had no request in flight. Rows per mode also
// give the trainer's seconds per step and its phases (rollout: waiting for the step's round). All processes share
// this machine's cores.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BenchRow } from './table.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import type { TrainRow } from '../trainer/logs/metrics.ts';

const STEPS = Number(process.env.METRL_BENCH_STEPS ?? 6);
const MODALITY = process.env.METRL_BENCH_MODALITY === 'image' ? 'image' : 'text';
const THREADS = process.env.METRL_BENCH_THREADS ? ['--threads', process.env.METRL_BENCH_THREADS] : [];
const BIN = resolve(import.meta.dirname, '..', 'bin', 'metrl.js');
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

/** `metrl serve` on 127.0.0.1 with a free port; resolves with its URL (rejects if it exits first or takes over 120 s). */
function startServer(base: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--checkpoint',
      base,
      '--port',
      '0',
      '--enable-lora',
      '--logprobs-mode',
      'processed_logprobs',
      ...THREADS,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  return new Promise((done, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error('metrl serve did not start within 120 s')), 120_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('http://'));
      if (line) {
        clearTimeout(timer);
        done({ url: line.trim(), child });
      }
    });
    child.on('exit', (code) => fail(new Error(`metrl serve exited ${code}`)));
  });
}

/** A proxy in front of `target` (http://host:port/v1) that records the intervals during which a request is in flight. */
async function busyProxy(target: string): Promise<{ url: string; server: Server; busy: [number, number][] }> {
  const root = target.replace(/\/v1$/, '');
  const busy: [number, number][] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const start = performance.now();
      try {
        const answer = await fetch(root + req.url, {
          method: req.method,
          headers: { 'content-type': 'application/json' },
          body: req.method === 'POST' ? Buffer.concat(chunks) : undefined,
          signal: AbortSignal.timeout(600_000),
        });
        const text = await answer.text();
        busy.push([start, performance.now()]);
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' }).end(text);
      } catch (error) {
        res.writeHead(502).end(String(error));
      }
    });
  }).listen(0, '127.0.0.1');
  await new Promise((done) => server.once('listening', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, busy };
}

/** Total length of the union of intervals, within [from, to]. */
function covered(intervals: [number, number][], from: number, to: number): number {
  const sorted = intervals
    .map(([s, e]): [number, number] => [Math.max(s, from), Math.min(e, to)])
    .filter(([s, e]) => e > s)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [s, e] of sorted) {
    if (e <= end) continue;
    total += e - Math.max(s, end);
    end = e;
  }
  return total;
}

/**
 * `metrl train … --out OUT` to the end (rejects on a non-zero exit, with its stderr); resolves with the time (this
 * process's clock) at which each train row reached OUT/metrics.jsonl, polled every 10 ms.
 */
function train(args: string[], out: string): Promise<number[]> {
  const child = spawn(process.execPath, [BIN, 'train', ...args, '--out', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const seen: number[] = [];
  const metrics = join(out, 'metrics.jsonl');
  const poll = setInterval(() => {
    if (!existsSync(metrics)) return;
    const rows = (readFileSync(metrics, 'utf8').match(/"type":"train"/g) ?? []).length;
    while (seen.length < rows) seen.push(performance.now());
  }, 10);
  return new Promise((done, fail) =>
    child.on('exit', (code) => {
      clearInterval(poll);
      if (code === 0) done(seen);
      else fail(new Error(`metrl train exited ${code}: ${err}`));
    }),
  );
}

export async function run(): Promise<BenchRow[]> {
  const base = join(CHECKPOINTS_DIR, 'base');
  if (!existsSync(join(base, 'model.safetensors')))
    return [{ group: 'async grpo', name: 'skipped', value: 0, unit: '', note: 'no checkpoints/base' }];
  const scratch = mkdtempSync(join(tmpdir(), 'metrl-async-bench-'));
  const rows: BenchRow[] = [];
  const servers: { url: string; child: ChildProcess }[] = [];
  const proxies: Server[] = [];
  try {
    servers.push(...(await Promise.all([startServer(base), startServer(base)])));
    for (const [label, flags] of [
      ['synchronous', []],
      ['--async --max-staleness 1', ['--async', '--max-staleness', '1']],
    ] as const) {
      const fronts = await Promise.all(servers.map((s) => busyProxy(s.url)));
      proxies.push(...fronts.map((f) => f.server));
      const out = join(scratch, label.replace(/[^a-z0-9]+/g, '-'));
      const rowTimes = await train(
        [
          '--domain',
          'shell',
          '--modality',
          MODALITY,
          '--checkpoint',
          base,
          '--steps',
          String(STEPS),
          '--test-size',
          '2',
          '--eval-every',
          '1000',
          '--checkpoint-every',
          '1000',
          '--quiet',
          ...THREADS,
          ...fronts.flatMap((f) => ['--rollout-server', f.url]),
          ...flags,
        ],
        out,
      );
      const steps = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as TrainRow)
        .filter((r) => r.type === 'train');
      const measured = steps.slice(1);
      const mean = (f: (r: TrainRow) => number) => measured.reduce((s, r) => s + f(r), 0) / measured.length;
      // The measured steps: from the first step's row to the last's.
      const [from, to] = [rowTimes[0], rowTimes[rowTimes.length - 1]];
      const windowMs = to - from;
      const idle = fronts.map((f) => 1 - covered(f.busy, from, to) / windowMs);
      const group = `grpo shell ${MODALITY}, 2 replicas, ${label}`;
      const note = `${measured.length} steps after 1 warm-up, threads ${THREADS[1] ?? 'every core'} per process, load ${load()}`;
      process.stderr.write(
        `bench async: ${group}: ${measured.map((r) => r.time.total.toFixed(2)).join(' ')} s per step (load ${load()})\n`,
      );
      rows.push(
        { group, name: 'seconds per step', value: mean((r) => r.time.total), unit: 's', note },
        { group, name: '  rollout (waiting for the round)', value: mean((r) => r.time.rollout), unit: 's' },
        { group, name: '  reward', value: mean((r) => r.time.reward), unit: 's' },
        { group, name: '  log-probs (reference)', value: mean((r) => r.time.logprobs), unit: 's' },
        { group, name: '  update', value: mean((r) => r.time.update), unit: 's' },
        {
          group,
          name: 'wall seconds per step',
          value: windowMs / 1000 / measured.length,
          unit: 's',
          note: 'between the rows of the first and the last step',
        },
        {
          group,
          name: 'replica idle fraction',
          value: idle.reduce((s, x) => s + x, 0) / idle.length,
          unit: '',
          note: `each: ${idle.map((x) => x.toFixed(3)).join(', ')} (no request in flight)`,
        },
      );
    }
  } finally {
    for (const p of proxies) p.close();
    for (const s of servers) s.child.kill('SIGTERM');
    rmSync(scratch, { recursive: true, force: true });
  }
  return rows;
}
