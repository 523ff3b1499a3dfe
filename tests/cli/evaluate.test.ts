// `metrl evaluate` as a user runs it (the real binary, spawned), against a local upstream through
// @huggingface/inference: the key from --api-key-env reaches the server but never the run folder; 401 stops with
// exit 2 keeping finished items; a run killed mid-way resumes without asking any finished item again (counted at the
// upstream); a torn last line is repaired, corruption elsewhere is reported; bad flags are one line and exit 2.
import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnTracked } from '../helpers/tracked-children.ts';
import { startUpstream, type Behaviour, type Upstream } from '../eval/upstream.ts';

const PROJECT = resolve(import.meta.dirname, '..', '..');
const BIN = join(PROJECT, 'bin', 'metrl.js');

interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function start(args: string[], env: Record<string, string> = {}) {
  const child = spawnTracked(process.execPath, [BIN, ...args], { cwd: PROJECT, env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<Result>((resolveDone) =>
    child.on('close', (code, signal) => resolveDone({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

const metrl = (args: string[], env: Record<string, string> = {}) => start(args, env).done;
const scratch = () => mkdtempSync(join(tmpdir(), 'metrl-evalcli-'));
const rowsOf = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
    : [];

let upstream: Upstream | null = null;
afterEach(async () => {
  await upstream?.close();
  upstream = null;
});

async function serve(script: (index: number) => Behaviour) {
  upstream = await startUpstream((r) => script(r.index));
  return upstream;
}

const base = (url: string, out: string) => [
  'evaluate',
  '--model',
  'test-model',
  '--endpoint',
  url,
  '--domain',
  'shell',
  '--actions',
  '4',
  '--seed',
  '3',
  '--out',
  out,
  '--backoff',
  '0.02',
  '--quiet',
];

describe('metrl evaluate (CLI)', () => {
  it('sends the key from --api-key-env and keeps it out of the run folder', async () => {
    const up = await serve(() => ({ kind: 'answer' }));
    const out = join(scratch(), 'run');
    const secret = 'sk-test-0123456789-secret';
    const result = await metrl([...base(up.url, out), '--n', '6', '--api-key-env', 'METRL_TEST_KEY'], {
      METRL_TEST_KEY: secret,
    });
    expect(result.code).toBe(0);
    expect(up.requests.every((r) => r.authorization === `Bearer ${secret}`)).toBe(true);
    expect(result.stdout).toMatch(/\| zero-shot \| test-model \| 100\.0 ± \d+\.\d \(0 invalid\) \|/);
    for (const name of readdirSync(out)) expect(readFileSync(join(out, name), 'utf8')).not.toContain(secret);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).model).toEqual({
      kind: 'hosted',
      id: 'test-model',
      endpoint: up.url,
      api_key_env: 'METRL_TEST_KEY',
    });
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.settings[0].summary).toMatchObject({ count: 6, accuracy: 1, invalid: 0 });
    expect(rowsOf(join(out, 'episodes.jsonl'))).toHaveLength(6);
  });

  it('exits 2 on 401 with the reason, keeping finished items; --resume then completes the run', async () => {
    let fatal = true;
    const up = await serve((i) => (i >= 2 && fatal ? { kind: 'status', status: 401 } : { kind: 'answer' }));
    const out = join(scratch(), 'run');
    const first = await metrl([...base(up.url, out), '--n', '5', '--workers', '1']);
    expect(first.code).toBe(2);
    expect(first.stderr).toMatch(/metrl: error: stopped: HTTP 401.*2 finished items are kept/);
    expect(rowsOf(join(out, 'shell-text.jsonl'))).toHaveLength(2);
    expect(up.requests).toHaveLength(3);
    fatal = false;
    // The resume must repeat the configuration, --workers included (as the harness requires).
    const changed = await metrl([...base(up.url, out), '--n', '5', '--resume']);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/^metrl: error: --resume: 'runtime' differs from the stored run .*\n$/);
    const second = await metrl([...base(up.url, out), '--n', '5', '--workers', '1', '--resume']);
    expect(second.code, second.stderr).toBe(0);
    expect(up.requests).toHaveLength(3 + 3);
    expect(rowsOf(join(out, 'shell-text.jsonl'))).toHaveLength(5);
  });

  it('resumes a killed run without asking any finished item again', async () => {
    const up = await serve(() => ({ kind: 'answer', delayMs: 60 }));
    const out = join(scratch(), 'run');
    const file = join(out, 'shell-text.jsonl');
    const args = [...base(up.url, out), '--n', '24', '--workers', '2'];
    const run = start(args);
    // Kill it hard once a few items are on disk (SIGKILL: no chance to tidy up).
    const deadline = Date.now() + 30_000;
    while (rowsOf(file).length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    run.child.kill('SIGKILL');
    const killed = await run.done;
    expect(killed.signal).toBe('SIGKILL');
    const finishedBefore = new Set(rowsOf(file).map((l) => JSON.parse(l).id));
    expect(finishedBefore.size).toBeGreaterThanOrEqual(5);
    expect(finishedBefore.size).toBeLessThan(24);
    const requestsBefore = up.requests.length;

    const resumed = await metrl([...args, '--resume']);
    expect(resumed.code).toBe(0);
    // Exactly the unfinished items were asked: none of the finished ones again.
    expect(up.requests.length - requestsBefore).toBe(24 - finishedBefore.size);
    const rows = rowsOf(file).map((l) => JSON.parse(l));
    expect(rows).toHaveLength(24);
    expect(new Set(rows.map((r) => r.id)).size).toBe(24);
    expect(rows.every((r) => r.status === 'ok' && r.reward === 1)).toBe(true);
  });

  it('stops on Ctrl-C (SIGINT) with status 130, keeping finished items', async () => {
    const up = await serve(() => ({ kind: 'answer', delayMs: 80 }));
    const out = join(scratch(), 'run');
    const file = join(out, 'shell-text.jsonl');
    const run = start([...base(up.url, out), '--n', '30', '--workers', '1']);
    const deadline = Date.now() + 30_000;
    while (rowsOf(file).length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(/interrupted; \d+ finished items kept; continue with --resume/);
    const kept = rowsOf(file).map((l) => JSON.parse(l));
    expect(kept.length).toBeGreaterThanOrEqual(3);
    expect(kept.length).toBeLessThan(30);
    expect(kept.every((r) => r.status === 'ok')).toBe(true);
    expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).complete).toBe(false);
  });

  it('repairs a torn last line on resume and reports corruption elsewhere', async () => {
    const up = await serve(() => ({ kind: 'answer' }));
    const out = join(scratch(), 'run');
    const file = join(out, 'shell-text.jsonl');
    expect((await metrl([...base(up.url, out), '--n', '4', '--limit', '2'])).code).toBe(0);
    appendFileSync(file, '{"id":"shell/text/T4/zero-shot|torn');
    const repaired = await metrl([...base(up.url, out), '--n', '4', '--resume']);
    expect(repaired.code).toBe(0);
    expect(repaired.stderr).toMatch(/shell-text\.jsonl: cut a torn last line/);
    expect(rowsOf(file)).toHaveLength(4);
    expect(up.requests).toHaveLength(4);

    const lines = rowsOf(file);
    writeFileSync(file, [lines[0], 'garbage', ...lines.slice(1)].join('\n') + '\n');
    const corrupt = await metrl([...base(up.url, out), '--n', '4', '--resume']);
    expect(corrupt.code).toBe(2);
    expect(corrupt.stderr.trim()).toMatch(/^metrl: error: .*shell-text\.jsonl:2: not valid JSON$/);
    expect(rowsOf(file)).toHaveLength(5); // nothing dropped
  });

  it('rejects bad input with one line and exit 2, writing nothing', async () => {
    // The CLI path of a few; tests/eval/settings.test.ts covers the rest of the rules in-process.
    const cases: Array<[string[], RegExp]> = [
      [['evaluate', '--domain', 'shell'], /name a model/],
      [
        [
          'evaluate',
          '--model',
          'm',
          '--endpoint',
          'http://127.0.0.1:9/v1',
          '--api-key-env',
          'METRL_UNSET_VAR',
          '--domain',
          'shell',
        ],
        /METRL_UNSET_VAR is not set/,
      ],
    ];
    const dir = scratch();
    for (const [args, pattern] of cases) {
      const result = await metrl([
        ...args,
        ...(args.includes('--resume') ? [] : ['--out', join(dir, 'never')]),
        '--quiet',
      ]);
      expect(result.code, args.join(' ')).toBe(2);
      const lines = result.stderr.split('\n').filter((l) => l !== '');
      expect(lines, args.join(' ')).toHaveLength(1);
      expect(lines[0]).toMatch(pattern);
      expect(existsSync(join(dir, 'never')), args.join(' ')).toBe(false);
    }
  });

  it('evaluates the Game Start baseline of Table 1 offline', async () => {
    const out = join(scratch(), 'run');
    const result = await metrl([
      'evaluate',
      '--model',
      'baseline:game-start',
      '--domain',
      'chess',
      '--modality',
      'text,image',
      '--n',
      '20',
      '--out',
      out,
      '--quiet',
    ]);
    expect(result.code).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    // Game Start after 10 moves: most of the board is unchanged (74.9% in the paper on real games), never perfect.
    for (const s of summary.settings) expect(s.summary.accuracy).toBeGreaterThan(0.6);
    for (const s of summary.settings) expect(s.summary.accuracy).toBeLessThan(0.95);
  });
});
