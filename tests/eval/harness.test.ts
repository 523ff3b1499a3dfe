// The harness against a real local HTTP upstream, through @huggingface/inference (no mocked client): scoring of
// answered items, the request settings and finish reasons, retries on 429 (Retry-After honoured), 500 and slow
// responses, the fatal stop on 400, 401 and 402 that keeps finished work (as the MET-Bench harness stops), and resume
// reusing finished rows only under the same configuration.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellEnv } from '../../envs/shell/index.ts';
import type { Domain } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import type { Progress } from '../../eval/progress.ts';
import { buildReport } from '../../eval/report.ts';
import { readResults } from '../../eval/results.ts';
import type { RetryPolicy } from '../../eval/retry.ts';
import type { RunConfig } from '../../eval/run-config.ts';
import { runEvaluation } from '../../eval/run.ts';
import { expandSettings, settingKey, type SettingOptions } from '../../eval/settings.ts';
import { openSource } from '../../eval/sources/index.ts';
import { startUpstream, type Behaviour, type Upstream, type UpstreamRequest } from './upstream.ts';

const envs = new Map<Domain, Env>([['shell', shellEnv]]);
const silent: Progress = { start() {}, tick() {}, retry() {}, stop() {} };
const fastRetry: RetryPolicy = { retries: 4, baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 2000 };

let upstream: Upstream | null = null;
afterEach(async () => {
  await upstream?.close();
  upstream = null;
});

const track: SettingOptions = {
  domains: ['shell'],
  modalities: ['text'],
  imageRatios: null,
  actions: [3],
  prompts: ['zero-shot'],
  shots: null,
  task: 'track',
  cascade: false,
};

function config(url: string, overrides: Partial<RunConfig> = {}): RunConfig {
  const settings = expandSettings(track, envs);
  return {
    kind: 'metrl-eval',
    created: 'test',
    label: 'test-model',
    model: { kind: 'hosted', id: 'test-model', endpoint: url },
    settings,
    n: 8,
    seed: 1,
    sampling: { temperature: 0, max_tokens: 32 },
    extra: {},
    runtime: { workers: 2, limit: null, retries: fastRetry.retries, timeout_s: fastRetry.timeoutMs / 1000 },
    ...overrides,
  };
}

async function run(
  script: (r: UpstreamRequest) => Behaviour,
  options: { out?: string; resume?: boolean; retry?: RetryPolicy; cfg?: Partial<RunConfig>; fresh?: boolean } = {},
) {
  if (options.fresh) {
    await upstream?.close();
    upstream = null;
  }
  upstream ??= await startUpstream(script);
  const out = options.out ?? mkdtempSync(join(tmpdir(), 'metrl-eval-'));
  const cfg = config(upstream.url, options.cfg);
  const source = await openSource(cfg.model, {
    envs,
    sampling: { temperature: 0, maxTokens: 32 },
    seed: 1,
    compact: async () => {
      throw new Error('unused');
    },
    openCheckpoint: async () => {
      throw new Error('unused');
    },
  });
  const outcome = await runEvaluation({
    out,
    resume: options.resume ?? false,
    config: cfg,
    envs,
    source,
    retry: options.retry ?? fastRetry,
    progress: silent,
  });
  return { out, outcome, cfg };
}

describe('evaluation harness against a local upstream', () => {
  it('scores every item, records usage and writes one row per item', async () => {
    const { out, outcome, cfg } = await run(() => ({ kind: 'answer' }));
    expect(outcome.stopped).toBeNull();
    expect(outcome.rows).toHaveLength(8);
    expect(upstream!.requests).toHaveLength(8);
    // The upstream solves the shell game from the prompt text, so every answer is right.
    expect(outcome.rows.every((r) => r.status === 'ok' && r.reward === 1)).toBe(true);
    expect(outcome.rows[0].usage).toEqual({ prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 });
    // The request carried the settings asked for.
    expect(upstream!.requests[0].body.temperature).toBe(0);
    // as the MET-Bench harness sends it: the budget as max_completion_tokens, the temperature, no max_tokens
    expect(upstream!.requests[0].body.max_completion_tokens).toBe(32);
    expect(upstream!.requests[0].body.temperature).toBe(0);
    expect(upstream!.requests[0].body).not.toHaveProperty('max_tokens');
    expect(upstream!.requests[0].body).not.toHaveProperty('reasoning_effort');
    expect(outcome.rows.every((r) => r.finish_reason === 'stop')).toBe(true);
    const lines = readFileSync(join(out, 'shell-text.jsonl'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(8);
    const report = buildReport('m', false, cfg.settings, new Map([[outcome.rows[0].setting, 8]]), outcome.rows, envs);
    expect(report.settings[0].summary.accuracy).toBe(1);
    expect(report.settings[0].summary.ci95?.method).toBe('wilson');
  });

  it('scores wrong and unparseable answers as such', async () => {
    const { outcome } = await run((r) => ({
      kind: 'answer',
      text: r.index % 2 === 0 ? 'no idea' : 'FINAL ANSWER: 12',
    }));
    expect(outcome.rows.every((r) => r.status === 'ok' && r.reward === 0 && r.valid === false)).toBe(true);
  });

  it('retries 429 after the Retry-After the server asked for', async () => {
    const { outcome } = await run(
      (r) => (r.index === 0 ? { kind: 'status', status: 429, retryAfter: '1' } : { kind: 'answer' }),
      {
        cfg: { n: 1, runtime: { workers: 1, limit: null, retries: 4, timeout_s: 2 } },
      },
    );
    const [first, second] = upstream!.requests;
    expect(outcome.rows[0]).toMatchObject({ status: 'ok', reward: 1, attempts: 2 });
    // Backoff alone would wait 10-20 ms; Retry-After: 1 makes it a second.
    expect(second.at - first.at).toBeGreaterThanOrEqual(950);
  });

  it('retries 500s and slow responses (timeouts), then succeeds', async () => {
    const retry = { ...fastRetry, timeoutMs: 300 };
    const { outcome } = await run(
      (r) => {
        if (r.index < 2) return { kind: 'status', status: 500, json: false };
        if (r.index === 2) return { kind: 'answer', delayMs: 1000 };
        return { kind: 'answer' };
      },
      { retry, cfg: { n: 2, runtime: { workers: 1, limit: null, retries: 4, timeout_s: 0.3 } } },
    );
    expect(outcome.rows.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(outcome.rows[0].attempts).toBe(4); // 500, 500, timeout, answer
    expect(upstream!.requests).toHaveLength(5);
  });

  it('gives up on an item after its retries and records why, without stopping the run', async () => {
    const { outcome } = await run((r) => (r.index < 3 ? { kind: 'status', status: 503 } : { kind: 'answer' }), {
      retry: { ...fastRetry, retries: 2 },
      cfg: { n: 3, runtime: { workers: 1, limit: null, retries: 2, timeout_s: 2 } },
    });
    expect(outcome.stopped).toBeNull();
    expect(outcome.rows[0]).toMatchObject({ status: 'error', attempts: 3 });
    expect(outcome.rows[0].error).toMatch(/503.*gave up after 3 attempts/);
    expect(outcome.rows.slice(1).every((r) => r.status === 'ok')).toBe(true);
  });

  for (const status of [400, 402]) {
    it(`stops the run on a ${status}, keeping the finished items (as the harness)`, async () => {
      const { outcome, out } = await run((r) => (r.index === 1 ? { kind: 'status', status } : { kind: 'answer' }), {
        fresh: true,
        cfg: { n: 3, runtime: { workers: 1, limit: null, retries: 4, timeout_s: 2 } },
      });
      expect(outcome.stopped?.reason).toBe('fatal');
      expect(outcome.stopped && 'failure' in outcome.stopped ? outcome.stopped.failure.status : null).toBe(status);
      expect(outcome.rows.map((r) => r.status)).toEqual(['ok']);
      expect(upstream!.requests).toHaveLength(2); // nothing asked after the refusal
      expect(readResults(out).rows.size).toBe(1);
    });
  }

  it('sends the temperature omitted, the budget as max_tokens and a reasoning effort when asked; keeps "length"', async () => {
    await upstream?.close();
    upstream = await startUpstream(() => ({ kind: 'answer', finishReason: 'length' }));
    const cfg = config(upstream.url, { n: 2 });
    const source = await openSource(cfg.model, {
      envs,
      sampling: { temperature: null, maxTokens: 77, tokenParameter: 'max_tokens', reasoningEffort: 'high' },
      seed: 1,
      compact: async () => {
        throw new Error('unused');
      },
      openCheckpoint: async () => {
        throw new Error('unused');
      },
    });
    const out = mkdtempSync(join(tmpdir(), 'metrl-eval-'));
    const outcome = await runEvaluation({
      out,
      resume: false,
      config: cfg,
      envs,
      source,
      retry: fastRetry,
      progress: silent,
    });
    const body = upstream.requests[0].body;
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('max_completion_tokens');
    expect(body).toMatchObject({ max_tokens: 77, reasoning_effort: 'high' });
    expect(outcome.rows.map((r) => r.finish_reason)).toEqual(['length', 'length']);
    const report = buildReport(
      'm',
      false,
      cfg.settings,
      new Map([[settingKey(cfg.settings[0]), 2]]),
      outcome.rows,
      envs,
    );
    expect(report.settings[0].summary.harness).toMatchObject({ completed: 2, truncated: 2 });
  });

  it('stops on 401, keeps every finished item, and resume finishes the rest without repeating them', async () => {
    let unauthorised = true;
    const script = (r: UpstreamRequest): Behaviour =>
      r.index >= 3 && unauthorised ? { kind: 'status', status: 401 } : { kind: 'answer' };
    const first = await run(script, { cfg: { runtime: { workers: 1, limit: null, retries: 4, timeout_s: 2 } } });
    expect(first.outcome.stopped?.reason).toBe('fatal');
    expect(
      first.outcome.stopped && 'failure' in first.outcome.stopped ? first.outcome.stopped.failure.status : null,
    ).toBe(401);
    expect(first.outcome.rows).toHaveLength(3);
    expect(upstream!.requests).toHaveLength(4); // three answered, the fourth got 401 and nothing more was sent
    expect(readResults(first.out).rows.size).toBe(3);

    unauthorised = false;
    const before = upstream!.requests.length;
    const second = await run(script, {
      out: first.out,
      resume: true,
      cfg: { runtime: { workers: 1, limit: null, retries: 4, timeout_s: 2 } },
    });
    expect(second.outcome.reused).toBe(3);
    expect(second.outcome.rows).toHaveLength(8);
    expect(upstream!.requests.length - before).toBe(5);
    expect(second.outcome.rows.every((r) => r.status === 'ok')).toBe(true);
  });

  it('stops at once when nobody listens at the endpoint', async () => {
    const closed = await startUpstream(() => ({ kind: 'answer' }));
    await closed.close();
    const out = mkdtempSync(join(tmpdir(), 'metrl-eval-'));
    const cfg = config(closed.url, { n: 3 });
    const source = await openSource(cfg.model, {
      envs,
      sampling: { temperature: 0, maxTokens: 32 },
      seed: 1,
      compact: async () => {
        throw new Error('unused');
      },
      openCheckpoint: async () => {
        throw new Error('unused');
      },
    });
    const started = performance.now();
    const outcome = await runEvaluation({
      out,
      resume: false,
      config: cfg,
      envs,
      source,
      retry: { ...fastRetry, baseDelayMs: 1000 },
      progress: silent,
    });
    expect(outcome.stopped?.reason).toBe('fatal');
    expect(outcome.stopped && 'failure' in outcome.stopped ? outcome.stopped.failure.message : '').toMatch(
      /cannot reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
    );
    expect(performance.now() - started).toBeLessThan(900); // no backoff: not retried
    expect(outcome.rows).toHaveLength(0);
  });

  it('with --limit evaluates a prefix, and resume completes it', async () => {
    const first = await run(() => ({ kind: 'answer' }), {
      cfg: { runtime: { workers: 2, limit: 3, retries: 4, timeout_s: 2 } },
    });
    expect(first.outcome.rows).toHaveLength(3);
    const second = await run(() => ({ kind: 'answer' }), { out: first.out, resume: true });
    expect(second.outcome.reused).toBe(3);
    expect(second.outcome.rows).toHaveLength(8);
    expect(upstream!.requests).toHaveLength(8);
  });

  it('refuses to resume with different settings', async () => {
    const first = await run(() => ({ kind: 'answer' }), { cfg: { n: 2 } });
    await expect(run(() => ({ kind: 'answer' }), { out: first.out, resume: true, cfg: { n: 3 } })).rejects.toThrow(
      /'n' differs/,
    );
  });

  it('refuses to resume with other runtime settings (as the harness), but --limit may change', async () => {
    const first = await run(() => ({ kind: 'answer' }), { cfg: { n: 2 } });
    const runtime = { workers: 3, limit: null, retries: fastRetry.retries, timeout_s: fastRetry.timeoutMs / 1000 };
    await expect(
      run(() => ({ kind: 'answer' }), { out: first.out, resume: true, cfg: { n: 2, runtime } }),
    ).rejects.toThrow(/'runtime' differs from the stored run \(\{"workers":2,/);
  });

  it('sends image actions as PNG data URLs that carry the actions: a pixel-reading model scores 100%', async () => {
    const settings = expandSettings({ ...track, modalities: ['image'] }, envs);
    const { outcome } = await run(() => ({ kind: 'answer' }), { cfg: { n: 6, settings } });
    expect(outcome.rows.every((r) => r.status === 'ok' && r.reward === 1)).toBe(true);
    const content = upstream!.requests[0].body.messages.at(-1)!.content as Array<{
      type: string;
      image_url?: { url: string };
    }>;
    const images = content.filter((p) => p.type === 'image_url');
    expect(images).toHaveLength(3);
    expect(images[0].image_url!.url).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
  });

  it('few-shot: solved train-split examples before each question, the same for the same item on resume', async () => {
    const settings = expandSettings({ ...track, prompts: ['few-shot'], shots: 2 }, envs);
    const { out, outcome } = await run(() => ({ kind: 'answer' }), { cfg: { n: 4, settings } });
    expect(outcome.rows.every((r) => r.reward === 1)).toBe(true);
    const messages = upstream!.requests[0].body.messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(messages[1].content).toMatch(/^FINAL ANSWER: [123]$/);
    const selection = readFileSync(join(out, 'episodes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const shots = selection.filter((r) => r.role === 'shot');
    expect(shots.length).toBeGreaterThanOrEqual(2);
    expect(shots.every((r) => r.episode.split === 'train')).toBe(true);
    expect(selection.filter((r) => r.role === 'test').every((r) => r.episode.split === 'test')).toBe(true);
  });

  it('perception (Table 4): one request per image action, exact match on the action', async () => {
    const settings = expandSettings({ ...track, modalities: null, task: 'perception' }, envs);
    const { outcome } = await run(() => ({ kind: 'answer' }), { cfg: { n: 7, settings } });
    expect(outcome.rows).toHaveLength(7);
    expect(upstream!.requests).toHaveLength(7);
    expect(outcome.rows.map((r) => r.action_index)).toEqual([0, 1, 2, 0, 1, 2, 0]);
    expect(outcome.rows.every((r) => r.reward === 1 && r.prediction === r.target)).toBe(true);
    const wrong = await run(() => ({ kind: 'answer', text: '4 swap 1' }), { cfg: { n: 3, settings }, fresh: true });
    expect(wrong.outcome.rows.every((r) => r.reward === 0 && r.valid === false)).toBe(true);
  });

  it('cascade (Table 3): transcribes each image action, then tracks on text', async () => {
    const settings = expandSettings({ ...track, modalities: ['mixed'], imageRatios: [0.5], cascade: true }, envs);
    const { outcome } = await run(() => ({ kind: 'answer' }), { cfg: { n: 6, settings } });
    const imageActions = outcome.rows.reduce((s, r) => s + r.transcriptions!.length, 0);
    expect(imageActions).toBeGreaterThan(0);
    expect(upstream!.requests).toHaveLength(imageActions + 6);
    for (const r of outcome.rows)
      expect(r.transcriptions!.every((t) => t.correct && t.predicted === t.target)).toBe(true);
    expect(outcome.rows.every((r) => r.reward === 1 && r.attempts === r.transcriptions!.length + 1)).toBe(true);
    // Tracking requests hold text only: the transcriptions replaced the images.
    const tracking = upstream!.requests.filter(
      (r) => !JSON.stringify(r.body).includes('which shells are being swapped'),
    );
    expect(tracking).toHaveLength(6);
    expect(tracking.every((r) => !JSON.stringify(r.body).includes('image_url'))).toBe(true);
    // A model that misreads every image: the transcriptions are wrong and tracking goes wrong with them.
    const misread = await run(
      (r) => ({
        kind: 'answer',
        ...(JSON.stringify(r.body.messages).includes('which shells are being swapped') ? { text: '1 swap 1' } : {}),
      }),
      { cfg: { n: 6, settings }, fresh: true },
    );
    expect(
      misread.outcome.rows.flatMap((r) => r.transcriptions!).every((t) => !t.correct && t.predicted === null),
    ).toBe(true);
  });
});
