// `metrl train --rollout-server` as a user runs it, with real `metrl serve --enable-lora` replicas on 127.0.0.1 (a
// tiny checkpoint): a run on two replicas, one of them killed mid-run, finishes its steps on the other, and after a
// kill -9 of the trainer resumes to the same metrics as an uninterrupted run on one replica (the servers honour the
// per-group seeds, and both replicas run the same engine); an image run sends its prompts as chat messages and
// trains on what the replica sampled. Bad input checked before anything is written (one line, exit 2, no run folder,
// seconds): a server nobody listens on, a port fetch refuses, a port past 65535, a server without LoRA, one whose
// answer lacks token ids, an adapter folder the run cannot write. Found at the first rollout (one line, exit 2, the
// run keeps its step-0 checkpoint: --resume continues it): a server that tokenised an image prompt otherwise than
// metrl or whose chat answer lacks log-probs, token ids past the vocabulary, a server that cannot read the adapter
// folder.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expectUserError, metrl, PROJECT, scratchDir } from './helpers.ts';
import { startServe, type Served } from '../helpers/serve-process.ts';
import { killGroup, spawnTracked } from '../helpers/tracked-children.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';
import { closeRolloutStubs, healthyCompletions, rolloutStub } from '../helpers/rollout-stub.ts';

const base = tinyBaseCheckpoint();
const TINY = [
  'train',
  '--domain',
  'shell',
  '--modality',
  'text',
  '--checkpoint',
  base,
  '--backend',
  'wasm',
  '--train-size',
  '8',
  '--actions',
  '2',
  '--test-size',
  '4',
  '--group-size',
  '4',
  '--prompts-per-step',
  '4',
  '--max-completion-tokens',
  '4',
  '--eval-every',
  '3',
  '--checkpoint-every',
  '1',
  '--learning-rate',
  '0.05',
  '--seed',
  '1',
  '--temperature',
  '1',
  '--quiet',
];
const SERVE = [
  '--checkpoint',
  base,
  '--port',
  '0',
  '--backend',
  'wasm',
  '--enable-lora',
  '--logprobs-mode',
  'processed_logprobs',
];
const servers: Served[] = [];

/** Rows without what differs between runs on different servers: wall-clock times, where each group was sampled. */
function comparable(runDir: string) {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const { time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, rollout, ...rest } = JSON.parse(l);
      // TRL's step_time is wall-clock seconds too.
      if (rest.trl) delete rest.trl.step_time;
      return rest;
    });
}

beforeAll(async () => {
  servers.push(
    ...(await Promise.all([
      startServe(SERVE),
      startServe(SERVE),
      startServe(SERVE.filter((a) => a !== '--enable-lora')),
    ])),
  );
}, 60_000);

afterAll(() => {
  for (const s of servers) killGroup(s.child);
  closeRolloutStubs();
});

describe('train --rollout-server', () => {
  it('finishes on one replica when the other is killed mid-run, and resumes after a kill -9 to the uninterrupted run', async () => {
    const [a, b] = servers;
    const whole = scratchDir('rollout-whole');
    const first = await metrl([...TINY, '--steps', '6', '--out', whole, '--rollout-server', b.url]);
    expect(first.code, first.stderr).toBe(0);

    const cut = scratchDir('rollout-cut');
    const latest = join(cut, 'checkpoints', 'latest');
    const child = spawnTracked(
      process.execPath,
      [
        join(PROJECT, 'bin', 'metrl.js'),
        ...TINY,
        '--steps',
        '6',
        '--out',
        cut,
        '--rollout-server',
        a.url,
        '--rollout-server',
        b.url,
      ],
      { cwd: PROJECT, stdio: 'ignore' },
    );
    // Replica a dies once step 1 is checkpointed; the trainer is killed -9 once step 4 is.
    await new Promise<void>((done, fail) => {
      const timer = setInterval(() => {
        const at = existsSync(latest) ? readFileSync(latest, 'utf8').trim() : '';
        if (at === 'step-1' && a.child.exitCode === null && a.child.signalCode === null) killGroup(a.child);
        if (at === 'step-4') {
          clearInterval(timer);
          child.kill('SIGKILL');
        }
      }, 10);
      child.on('exit', (code, signal) => {
        clearInterval(timer);
        if (signal === 'SIGKILL') done();
        else fail(new Error(`train ended by itself (code ${code}) before it could be killed`));
      });
    });
    // The run's replicas are checked again when it resumes: the dead one is named, and the run resumes on the other.
    expectUserError(
      await metrl(['train', '--resume', '--out', cut, '--quiet']),
      new RegExp(`--rollout-server ${a.url.replace(/[.]/g, '\\.')}: nothing answers there \\(ECONNREFUSED\\)`),
    );
    const resumed = await metrl(['train', '--resume', '--out', cut, '--quiet', '--rollout-server', b.url]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(comparable(cut)).toEqual(comparable(whole));
    const rows = readFileSync(join(cut, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((r) => r.type === 'train');
    expect(rows.map((r) => r.step)).toEqual([1, 2, 3, 4, 5, 6]);
    // Step 1 was spread over both replicas; after a was killed, every group came from b, with the adapter of the step before.
    const root = (u: string) => u.replace(/\/v1$/, '');
    expect(new Set(rows[0].rollout.servers)).toEqual(new Set([root(a.url), root(b.url)]));
    for (const r of rows.slice(2)) expect(new Set(r.rollout.servers)).toEqual(new Set([root(b.url)]));
    for (const r of rows) expect(r.rollout.adapterVersions).toEqual([r.step - 1, r.step - 1, r.step - 1, r.step - 1]);
    expect(rows.some((r) => r.trl['sampling/importance_sampling_ratio/mean'] !== null)).toBe(true);
  }, 120_000);
});

describe('train --rollout-server --modality image', () => {
  it('sends the image prompts to the replica as chat messages and trains on what it sampled', async () => {
    const image = TINY.map((a, i) => (TINY[i - 1] === '--modality' ? 'image' : a));
    const out = scratchDir('rollout-image');
    const run = await metrl([...image, '--steps', '2', '--out', out, '--rollout-server', servers[1].url]);
    expect(run.code, run.stderr).toBe(0);
    const rows = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((r) => r.type === 'train');
    expect(rows.map((r) => r.step)).toEqual([1, 2]);
    for (const r of rows) expect(new Set(r.rollout.servers)).toEqual(new Set([servers[1].url.replace(/\/v1$/, '')]));
    expect(rows.map((r) => r.rollout.adapterVersions)).toEqual([
      [0, 0, 0, 0],
      [1, 1, 1, 1],
    ]);
  }, 60_000);
});

describe('train --rollout-server, bad servers: checked before anything is written', () => {
  /** One line, exit 2, no run folder, in seconds (the preflight: models/remote/preflight.ts). */
  async function expectRefused(args: string[], pattern: RegExp) {
    const out = join(scratchDir('rollout-refused'), 'run');
    const started = Date.now();
    expectUserError(await metrl([...TINY, '--steps', '2', '--out', out, ...args]), pattern);
    expect(existsSync(out)).toBe(false);
    expect(Date.now() - started).toBeLessThan(30_000);
  }

  it('a server nobody listens on, a port fetch refuses, a port past 65535', async () => {
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = s.address() as AddressInfo;
        s.close(() => done(p));
      });
    });
    await expectRefused(
      ['--rollout-server', `http://127.0.0.1:${port}`],
      /: --rollout-server http:\/\/127\.0\.0\.1:\d+: nothing answers there \(ECONNREFUSED\); start the server, or give the address it listens on$/,
    );
    await expectRefused(
      ['--rollout-server', 'http://127.0.0.1:9'],
      /: --rollout-server http:\/\/127\.0\.0\.1:9: port 9 is one that fetch refuses to connect to/,
    );
    await expectRefused(
      ['--rollout-server', 'http://127.0.0.1:99999'],
      /: --rollout-server: not a URL \(is the port at most 65535\?\) \(got "http:\/\/127\.0\.0\.1:99999"\)$/,
    );
  }, 90_000);

  it('a server without LoRA enabled, and one whose answer lacks token ids', async () => {
    await expectRefused(
      ['--rollout-server', servers[2].url],
      /no \/v1\/load_lora_adapter, LoRA is not enabled \(start vLLM with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True/,
    );
    const fixture = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', 'fixtures', 'rollout', 'vllm-completions-response.json'), 'utf8'),
    );
    for (const c of fixture.choices) delete c.token_ids;
    fixture.choices = fixture.choices.slice(0, 1);
    const url = await rolloutStub({ '/v1/completions': () => ({ status: 200, body: fixture }) });
    await expectRefused(
      ['--rollout-server', url],
      /does not fit the vllm protocol: choices\.0\.token_ids: no token_ids \(the server must support the request field return_token_ids/,
    );
  }, 90_000);

  it('an --rollout-adapter-dir the run cannot write', async () => {
    await expectRefused(
      ['--rollout-server', servers[1].url, '--rollout-adapter-dir', '/proc/metrl-adapters'],
      /: --rollout-adapter-dir \/proc\/metrl-adapters: cannot write in \/proc/,
    );
  }, 60_000);
});

describe('train --rollout-server, bad servers found at the first rollout: one line, exit 2, nothing lost', () => {
  async function expectStopped(urls: string[], pattern: RegExp) {
    const out = scratchDir('rollout-bad');
    expectUserError(
      await metrl([...TINY, '--steps', '2', '--out', out, ...urls.flatMap((u) => ['--rollout-server', u])]),
      pattern,
    );
    expect(readFileSync(join(out, 'checkpoints', 'latest'), 'utf8').trim()).toBe('step-0');
  }

  it('a server whose chat answer tokenised the image prompt otherwise, or lacks log-probs', async () => {
    const chat = () =>
      JSON.parse(
        readFileSync(
          join(import.meta.dirname, '..', 'fixtures', 'rollout', 'vllm-chat-completions-response.json'),
          'utf8',
        ),
      );
    // Group size 2: the fixture's two choices.
    const image = TINY.map((a, i) =>
      TINY[i - 1] === '--modality' ? 'image' : TINY[i - 1] === '--group-size' ? '2' : a,
    );
    const stopped = async (body: unknown, pattern: RegExp) => {
      const url = await rolloutStub({ '/chat/completions': () => ({ status: 200, body }) });
      const out = scratchDir('rollout-bad-image');
      expectUserError(await metrl([...image, '--steps', '2', '--out', out, '--rollout-server', url]), pattern);
      expect(readFileSync(join(out, 'checkpoints', 'latest'), 'utf8').trim()).toBe('step-0');
    };
    await stopped(
      chat(),
      /tokenised the prompt otherwise than metrl \(prompt_token_ids: 7 tokens against metrl's \d+, first difference at position \d+\): the learner would score other tokens than the server sampled after/,
    );
    const noLogprobs = chat();
    for (const c of noLogprobs.choices) c.logprobs = null;
    await stopped(
      noLogprobs,
      /does not fit the vllm protocol: choices\.0\.logprobs: no logprobs\.content \(the request asked for logprobs: true\)/,
    );
  }, 60_000);

  it('a server whose rollout answer holds token ids past the vocabulary', async () => {
    // Healthy for the preflight's two-token probe; a rollout (max_tokens 4) gets an id the model does not have.
    const url = await rolloutStub({
      '/v1/completions': (request) => {
        const answer = healthyCompletions(request) as { status: number; body: any };
        if (request?.max_tokens === 4) answer.body.choices[0].token_ids = [50, 9999];
        return answer;
      },
    });
    await expectStopped(
      [url],
      /cannot be trained on: choice 0, token 1: id 9999 is outside the model's vocabulary .*; serve the same checkpoint as --checkpoint/,
    );
  }, 60_000);

  it('a server that cannot read the adapter folder', async () => {
    const url = await rolloutStub({
      load_lora_adapter: (request) =>
        request?.lora_name
          ? {
              status: 400,
              body: {
                object: 'error',
                message: 'Loading lora metrl-policy failed: No adapter found for /elsewhere',
                type: 'BadRequestError',
                param: null,
                code: 400,
              },
            }
          : { status: 400, body: { message: 'lora_name and lora_path must be provided' } },
    });
    await expectStopped(
      [url],
      /cannot load the adapter .*rollout-adapters\/v0: Loading lora metrl-policy failed: No adapter found .*--rollout-adapter-dir/,
    );
  }, 60_000);
});
