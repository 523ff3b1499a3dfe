// `metrl serve` as a user runs it: the real binary on 127.0.0.1 with a tiny checkpoint written by models/ code. The
// evaluator talks to it through @huggingface/inference (an endpoint URL, no mocked client) and gets the same answers
// as the in-process checkpoint source on the same items; malformed requests get a 400 with a JSON error body and the
// server keeps serving; SIGTERM shuts it down cleanly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startServe } from '../helpers/serve-process.ts';
import { spawnTracked } from '../helpers/tracked-children.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { saveBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import { initBackend } from '../../models/backend.ts';
import { shellEnv } from '../../envs/shell/index.ts';
import type { Domain } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import type { Progress } from '../../eval/progress.ts';
import { runEvaluation } from '../../eval/run.ts';
import { expandSettings } from '../../eval/settings.ts';
import { openSource } from '../../eval/sources/index.ts';
import { checkpointSource } from '../../eval/sources/local-checkpoint.ts';
import { compactTemplate } from '../../eval/compact.ts';
import type { RunConfig } from '../../eval/run-config.ts';

const PROJECT = resolve(import.meta.dirname, '..', '..');
const envs = new Map<Domain, Env>([['shell', shellEnv]]);
const silent: Progress = { start() {}, tick() {}, retry() {}, stop() {} };

let checkpoint = '';
let child: ChildProcessWithoutNullStreams;
let url = '';
/** The server's stderr so far. */
let stderr: () => string;

beforeAll(async () => {
  await initBackend(undefined, null);
  checkpoint = mkdtempSync(join(tmpdir(), 'metrl-serve-ck-'));
  const policy = BuiltinPolicy.create({
    architecture: { dModel: 32, nLayers: 1, nHeads: 2, dMlp: 64, maxContext: 512, imageSize: 64, patchSize: 16 },
    seed: 7,
  });
  saveBaseCheckpoint(policy, checkpoint);
  policy.dispose();
  const served = await startServe(['--checkpoint', checkpoint, '--port', '0', '--model-id', 'tiny']);
  ({ child, url } = served);
  stderr = served.stderr;
}, 120_000);

afterAll(() => {
  if (child.exitCode === null) child.kill('SIGKILL');
});

const post = (body: string, path = '/chat/completions') =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('metrl serve', () => {
  it('binds 127.0.0.1 and lists its model', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const models = await (await fetch(`${url}/models`)).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'tiny', object: 'model' }] });
  });

  it('answers chat completions with n choices and usage', async () => {
    const response = await post(
      JSON.stringify({
        messages: [{ role: 'user', content: 'shell\n2\n1 swap 2\n' }],
        temperature: 0.8,
        top_p: 0.9,
        max_tokens: 5,
        n: 3,
        seed: 1,
      }),
    );
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.choices).toHaveLength(3);
    for (const c of body.choices) {
      expect(typeof c.message.content).toBe('string');
      expect(['stop', 'length']).toContain(c.finish_reason);
    }
    expect(body.usage.prompt_tokens).toBeGreaterThan(10);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    expect(body.usage.completion_tokens).toBeLessThanOrEqual(15);
  });

  it('rejects malformed requests with a 400 JSON error and keeps serving', async () => {
    const bad: Array<[string, RegExp]> = [
      ['{not json', /not valid JSON/],
      ['[]', /expected object/],
      [JSON.stringify({ messages: [] }), /at least one message/],
      [JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] }), /messages\.0\.role/],
      [JSON.stringify({ messages: [{ role: 'user', content: 'x' }], temperature: -1 }), /temperature/],
      [JSON.stringify({ messages: [{ role: 'user', content: 'x' }], n: 99 }), /^n:/],
      [JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }), /max_tokens/],
      [JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 100000 }), /max_tokens: at most/],
      [
        JSON.stringify({ messages: [{ role: 'user', content: 'x' }], stream: true, logprobs: true }),
        /^stream: logprobs and return_token_ids are not streamed/,
      ],
      [JSON.stringify({ messages: [{ role: 'user', content: 'x' }], stop: ['a', 'b', 'c', 'd', 'e'] }), /^stop:/],
      [
        JSON.stringify({ messages: [{ role: 'user', content: 'x' }], top_logprobs: 21, logprobs: true }),
        /top_logprobs/,
      ],
      [JSON.stringify({ messages: [{ role: 'user', content: 'x' }], top_logprobs: 2 }), /needs logprobs: true/],
      [
        JSON.stringify({
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
          ],
        }),
        /data URLs/,
      ],
      [
        JSON.stringify({
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
          ],
        }),
        /could not be decoded/,
      ],
      [
        JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'audio', data: 'x' }] }] }),
        /messages\.0\.content: must be a string or a list of parts of type text or image_url/,
      ],
    ];
    for (const [body, pattern] of bad) {
      const response = await post(body);
      expect(response.status, body).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/json');
      const json = await response.json();
      expect(json.error.message, body).toMatch(pattern);
    }
    // Token-id prompts from outside: an id past the vocabulary, and image tokens without their image, are the client's.
    for (const [prompt, pattern] of [
      [[1, 40, 100_000], /^prompt\.2: token id 100000 is outside the model's vocabulary \(ids 0 to 100\)$/],
      [[1, 3, 40], /^the prompt has more image tokens than images \(0\)$/],
    ] as const) {
      const response = await post(JSON.stringify({ prompt, max_tokens: 2 }), '/completions');
      expect(response.status, JSON.stringify(prompt)).toBe(400);
      expect((await response.json()).error.message).toMatch(pattern);
    }
    expect((await fetch(`${url}/chat/completions`)).status).toBe(405);
    expect((await fetch(`${url}/nowhere`)).status).toBe(404);
    expect(
      (await post(JSON.stringify({ messages: [{ role: 'user', content: 'shell\n1\n' }], max_tokens: 2 }))).status,
    ).toBe(200);
  });

  it('survives clients that hang up, and answers many concurrent requests', async () => {
    const body = JSON.stringify({
      messages: [{ role: 'user', content: 'shell\n1\n1 swap 3\n' }],
      max_tokens: 30,
      temperature: 0,
    });
    // Five clients send a whole request and close their socket before any answer (a fetch aborted after a millisecond
    // raced the tiny model's answer on a quiet machine): the server finds each gone when it answers.
    const { hostname, port } = new URL(url);
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((done, failed) => {
        const socket = connect(Number(port), hostname, () => {
          socket.write(
            `POST /v1/chat/completions HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
            () => {
              socket.destroy();
              done();
            },
          );
        });
        socket.on('error', failed);
      });
    }
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(body).then((r) => r.json())));
    // Greedy: twenty identical requests, whatever batches they shared, get the same answer.
    expect(new Set(answers.map((a) => a.choices[0].message.content)).size).toBe(1);
  });

  it('is evaluated through @huggingface/inference with the same answers as in-process', async () => {
    const settings = expandSettings(
      {
        domains: ['shell'],
        modalities: ['image'],
        imageRatios: null,
        actions: [3],
        prompts: ['compact'],
        shots: null,
        task: 'track',
        cascade: false,
      },
      envs,
    );
    const config = (model: RunConfig['model']): RunConfig => ({
      kind: 'metrl-eval',
      created: 'test',
      label: 'tiny',
      model,
      settings,
      n: 4,
      seed: 5,
      sampling: { temperature: 0, max_tokens: 12 },
      extra: {},
      runtime: { workers: 1, limit: null, retries: 1, timeout_s: 60 },
    });
    const retry = { retries: 1, baseDelayMs: 50, maxDelayMs: 100, timeoutMs: 60_000 };
    const compact = async () => compactTemplate;
    const remoteModel = { kind: 'hosted' as const, id: 'tiny', endpoint: url };
    const remote = await openSource(remoteModel, {
      envs,
      sampling: { temperature: 0, maxTokens: 12 },
      seed: 5,
      compact,
      openCheckpoint: async () => {
        throw new Error('unused');
      },
    });
    const served = await runEvaluation({
      out: mkdtempSync(join(tmpdir(), 'metrl-serve-eval-')),
      resume: false,
      config: config(remoteModel),
      envs,
      source: remote,
      retry,
      progress: silent,
    });
    expect(served.rows).toHaveLength(4);
    expect(served.rows.every((r) => r.status === 'ok' && r.usage !== null)).toBe(true);

    const local = await checkpointSource(checkpoint, { temperature: 0, maxTokens: 12 }, 5, envs);
    const inProcess = await runEvaluation({
      out: mkdtempSync(join(tmpdir(), 'metrl-local-eval-')),
      resume: false,
      config: config({ kind: 'checkpoint', path: checkpoint }),
      envs,
      source: local,
      retry,
      progress: silent,
    });
    await local.close?.();
    // Same tokens in, greedy decoding: the same completions over HTTP (images through PNG data URLs) as in-process.
    expect(served.rows.map((r) => r.response)).toEqual(inProcess.rows.map((r) => r.response));
    expect(served.rows.map((r) => r.usage?.prompt_tokens)).toEqual(inProcess.rows.map((r) => r.usage?.prompt_tokens));
  });

  it('refuses a port in use and a missing checkpoint with one line and exit 2', async () => {
    const port = new URL(url).port;
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stderr: string }>((done) => {
        const other = spawnTracked(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), 'serve', ...args], {
          cwd: PROJECT,
        });
        let err = '';
        other.stderr!.on('data', (d) => (err += d));
        other.on('exit', (code) => done({ code, stderr: err }));
      });
    const busy = await run(['--checkpoint', checkpoint, '--port', port]);
    expect(busy.code).toBe(2);
    expect(busy.stderr).toMatch(new RegExp(`metrl: error: --port ${port}: already in use on 127\\.0\\.0\\.1`));
    const missing = await run(['--checkpoint', join(checkpoint, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toMatch(/^metrl: error: --checkpoint .*nope: no such folder$/);
  });

  it('shuts down cleanly on SIGTERM', async () => {
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr()).toMatch(/SIGTERM, shutting down/);
  });
});
