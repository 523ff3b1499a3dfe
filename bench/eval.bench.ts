// Evaluation speed: items per second through the whole harness (episode → chat messages with PNG images →
// @huggingface/inference → HTTP → `metrl serve` → built-in policy → score → JSONL row) at 1, 4 and 16 workers, with
// the shipped base checkpoint when there is one (else the default architecture with random weights, noted); and the
// harness's own cost per
// item against a local upstream that answers instantly, i.e. everything but the model.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BenchRow } from './table.ts';
import { shellEnv } from '../envs/shell/index.ts';
import type { Domain } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import { compactTemplate } from '../eval/compact.ts';
import { shippedBase } from '../models/load.ts';
import type { Progress } from '../eval/progress.ts';
import type { RunConfig } from '../eval/run-config.ts';
import { runEvaluation } from '../eval/run.ts';
import { expandSettings } from '../eval/settings.ts';
import { openSource } from '../eval/sources/index.ts';
import { checkpointSource } from '../eval/sources/local-checkpoint.ts';
import type { ModelSource } from '../eval/types.ts';

const PROJECT = resolve(import.meta.dirname, '..');
const envs = new Map<Domain, Env>([['shell', shellEnv]]);
const silent: Progress = { start() {}, tick() {}, retry() {}, stop() {} };

/** Evaluate n shell items against an endpoint; returns items per second (selection drawn before the clock starts). */
async function itemsPerSecond(
  url: string,
  n: number,
  workers: number,
  modality: 'text' | 'image',
  prompt: string,
  maxTokens: number,
  actions: number,
): Promise<number> {
  const model = { kind: 'hosted' as const, id: 'bench', endpoint: url };
  const source = await openSource(model, {
    envs,
    sampling: { temperature: 0, maxTokens },
    seed: 0,
    compact: async () => compactTemplate,
    openCheckpoint: async () => {
      throw new Error('unused');
    },
  });
  return timeRun(source, model, n, workers, modality, prompt, maxTokens, actions);
}

/** The same through an in-process source (the compact layout). */
function itemsPerSecondWith(
  source: ModelSource,
  path: string,
  n: number,
  workers: number,
  actions: number,
): Promise<number> {
  return timeRun(source, { kind: 'checkpoint', path }, n, workers, 'image', 'compact', 8, actions);
}

async function timeRun(
  source: ModelSource,
  model: RunConfig['model'],
  n: number,
  workers: number,
  modality: 'text' | 'image',
  prompt: string,
  maxTokens: number,
  actions: number,
): Promise<number> {
  const settings = expandSettings(
    {
      domains: ['shell'],
      modalities: [modality],
      imageRatios: null,
      actions: [actions],
      prompts: [prompt],
      shots: null,
      task: 'track',
      cascade: false,
    },
    envs,
  );
  const config: RunConfig = {
    kind: 'metrl-eval',
    created: 'bench',
    label: 'bench',
    model,
    settings,
    n,
    seed: 0,
    sampling: { temperature: 0, max_tokens: maxTokens },
    extra: {},
    runtime: { workers, limit: null, retries: 2, timeout_s: 300 },
  };
  const out = mkdtempSync(join(tmpdir(), 'metrl-bench-eval-'));
  try {
    const start = performance.now();
    const outcome = await runEvaluation({
      out,
      resume: false,
      config,
      envs,
      source,
      retry: { retries: 2, baseDelayMs: 100, maxDelayMs: 1000, timeoutMs: 300_000 },
      progress: silent,
    });
    const seconds = (performance.now() - start) / 1000;
    const failed = outcome.rows.filter((r) => r.status !== 'ok');
    if (failed.length > 0) throw new Error(`bench eval: ${failed.length} items failed: ${failed[0].error}`);
    return outcome.rows.length / seconds;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

async function randomCheckpoint(): Promise<string> {
  const { initBackend } = await import('../models/backend.ts');
  const { BuiltinPolicy } = await import('../models/builtin/policy.ts');
  const { saveBaseCheckpoint } = await import('../models/builtin/base-checkpoint.ts');
  await initBackend(undefined, null);
  const dir = mkdtempSync(join(tmpdir(), 'metrl-bench-ck-'));
  // The default architecture with random weights: the real model's cost per token, without its answers.
  const policy = BuiltinPolicy.create({ seed: 1 });
  saveBaseCheckpoint(policy, dir);
  policy.dispose();
  return dir;
}

async function startServe(checkpoint: string): Promise<{ url: string; stop(): Promise<string> }> {
  const child = spawn(
    process.execPath,
    [join(PROJECT, 'bin', 'metrl.js'), 'serve', '--checkpoint', checkpoint, '--port', '0'],
    { cwd: PROJECT },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('http://'));
      if (line) done(line.trim());
    });
    child.on('exit', (code) => fail(new Error(`metrl serve exited ${code}: ${stderr}`)));
  });
  return {
    url,
    /** Stops the server; resolves to its stderr (which ends with its batching statistics). */
    stop: () =>
      new Promise<string>((done) => {
        child.once('exit', () => done(stderr));
        child.kill('SIGTERM');
      }),
  };
}

/** A local upstream that answers every request at once: what is left is the harness's own work. */
async function instantUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const body = JSON.stringify({
    id: 'x',
    object: 'chat.completion',
    created: 0,
    model: 'x',
    choices: [{ index: 0, message: { role: 'assistant', content: 'FINAL ANSWER: 2' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** Requests per second of plain fetch calls, `inFlight` at a time. */
async function fetchRoundTrips(url: string, total: number, inFlight: number): Promise<number> {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next++ < total)
      await (
        await fetch(`${url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).json();
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return total / ((performance.now() - start) / 1000);
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];

  const upstream = await instantUpstream();
  try {
    await itemsPerSecond(upstream.url, 50, 4, 'text', 'zero-shot', 16, 10); // warm-up
    // Reference: one bare fetch round trip to the same upstream (Node's HTTP client), a floor for any harness.
    const fetchRate = await fetchRoundTrips(upstream.url, 400, 16);
    rows.push({
      group: 'eval harness',
      name: 'bare fetch round trip (reference)',
      value: 1000 / fetchRate,
      unit: 'ms',
      note: `same upstream, 16 in flight (${fetchRate.toFixed(0)} req/s)`,
    });
    for (const modality of ['text', 'image'] as const) {
      const rate = await itemsPerSecond(upstream.url, 400, 16, modality, 'zero-shot', 16, 10);
      rows.push({
        group: 'eval harness',
        name: `overhead per item, shell ${modality} T=10`,
        value: 1000 / rate,
        unit: 'ms',
        note: `instant local upstream, 16 workers (${rate.toFixed(0)} items/s)`,
      });
    }
  } finally {
    await upstream.close();
  }

  const shipped = shippedBase();
  const checkpoint = shipped ?? (await randomCheckpoint());
  const modelNote = shipped ? 'shipped base' : 'default-size model, random weights (no shipped base)';
  // In-process: the same items through the checkpoint source, where workers only fill decoding batches.
  const local = await checkpointSource(checkpoint, { temperature: 0, maxTokens: 8 }, 0, envs);
  try {
    await itemsPerSecondWith(local, checkpoint, 8, 4, 5); // warm-up
    for (const workers of [1, 16]) {
      const rate = await itemsPerSecondWith(local, checkpoint, 64, workers, 5);
      rows.push({
        group: 'eval in-process',
        name: `items/s, ${workers} workers`,
        value: rate,
        unit: 'items/s',
        note: `--checkpoint, shell image T=5, greedy, ≤8 tokens, ${modelNote}`,
      });
    }
  } finally {
    await local.close?.();
  }
  const serve = await startServe(checkpoint);
  try {
    await itemsPerSecond(serve.url, 8, 4, 'image', 'compact', 8, 5); // warm-up
    for (const workers of [1, 4, 16]) {
      const rate = await itemsPerSecond(serve.url, 64, workers, 'image', 'compact', 8, 5);
      rows.push({
        group: 'eval vs metrl serve',
        name: `items/s, ${workers} workers`,
        value: rate,
        unit: 'items/s',
        note: `shell image T=5, greedy, ≤8 tokens, ${modelNote}`,
      });
    }
  } finally {
    const log = await serve.stop();
    if (!shipped) rmSync(checkpoint, { recursive: true, force: true });
    const stats = /answered (\d+) prompts in (\d+) decoding batches/.exec(log);
    if (stats)
      rows.push({
        group: 'eval vs metrl serve',
        name: 'prompts per decoding batch',
        value: Number(stats[1]) / Number(stats[2]),
        unit: 'prompts',
        note: 'mean over all runs above (requests that arrive together share a batch)',
      });
  }
  return rows;
}
