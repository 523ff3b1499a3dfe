// `metrl evaluate` against a hosted model with the MET-Bench harness's request settings and files, through the real
// binary and a real HTTP server on 127.0.0.1: what each request carries by default (max_completion_tokens 4096,
// temperature 0) and with --temperature omit, --token-parameter max_tokens and --reasoning-effort; finish_reason kept
// per row and truncated answers counted; a 400 or 402 stops the run keeping finished items; and --metbench-files
// writes a harness run folder that `metrl score --format metbench` reads back to the same summary.json.
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metrl } from './helpers.ts';
import { startUpstream, type Behaviour, type Upstream } from '../eval/upstream.ts';

let upstream: Upstream | null = null;
afterEach(async () => {
  await upstream?.close();
  upstream = null;
});

async function serve(script: (index: number) => Behaviour) {
  upstream = await startUpstream((r) => script(r.index));
  return upstream;
}

const scratch = () => mkdtempSync(join(tmpdir(), 'metrl-metbench-'));
const rows = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));

const args = (url: string, out: string, ...more: string[]) => [
  'evaluate',
  '--model',
  'test-model',
  '--endpoint',
  url,
  '--domain',
  'shell',
  '--actions',
  '3',
  '--n',
  '4',
  '--workers',
  '1',
  '--out',
  out,
  '--quiet',
  ...more,
];

describe("metrl evaluate with the harness's request settings", () => {
  it('sends max_completion_tokens 4096 and temperature 0 by default, and keeps each finish_reason', async () => {
    const up = await serve((i) => ({ kind: 'answer', finishReason: i === 0 ? 'length' : 'stop' }));
    const out = join(scratch(), 'run');
    const result = await metrl(args(up.url, out));
    expect(result.code, result.stderr).toBe(0);
    for (const r of up.requests) {
      expect(r.body).toMatchObject({ max_completion_tokens: 4096, temperature: 0 });
      expect(r.body).not.toHaveProperty('max_tokens');
      expect(r.body).not.toHaveProperty('reasoning_effort');
    }
    expect(rows(join(out, 'shell-text.jsonl')).map((r) => r.finish_reason)).toEqual(['length', 'stop', 'stop', 'stop']);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.settings[0].summary.harness).toMatchObject({ completed: 4, errors: 0, truncated: 1 });
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(config.sampling).toEqual({
      temperature: 0,
      max_tokens: 4096,
      token_parameter: 'max_completion_tokens',
      reasoning_effort: null,
    });
  });

  it('--temperature omit --token-parameter max_tokens --reasoning-effort high: as a reasoning model needs', async () => {
    const up = await serve(() => ({ kind: 'answer' }));
    const out = join(scratch(), 'run');
    const result = await metrl(
      args(up.url, out, '--temperature', 'omit', '--token-parameter', 'max_tokens', '--max-tokens', '300'),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(up.requests[0].body).not.toHaveProperty('temperature');
    expect(up.requests[0].body).not.toHaveProperty('max_completion_tokens');
    expect(up.requests[0].body.max_tokens).toBe(300);
    const effort = await metrl(args(up.url, join(scratch(), 'run'), '--reasoning-effort', 'high'));
    expect(effort.code, effort.stderr).toBe(0);
    expect(up.requests.at(-1)!.body.reasoning_effort).toBe('high');
  });

  for (const status of [400, 402]) {
    it(`a ${status} stops the run: exit 2, one line naming it, the finished item kept`, async () => {
      const up = await serve((i) => (i === 1 ? { kind: 'status', status } : { kind: 'answer' }));
      const out = join(scratch(), 'run');
      const result = await metrl(args(up.url, out));
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^metrl: error: stopped: HTTP ${status}.*1 finished items are kept`));
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(up.requests).toHaveLength(2);
      expect(rows(join(out, 'shell-text.jsonl'))).toHaveLength(1);
    });
  }

  it('bad values are one line and exit 2', async () => {
    for (const [flag, value, pattern] of [
      ['--temperature', 'hot', /--temperature: must be a number from 0 to 2, or omit/],
      ['--temperature', '3', /--temperature/],
      ['--token-parameter', 'tokens', /--token-parameter: expected one of max_completion_tokens, max_tokens/],
    ] as const) {
      const result = await metrl(args('http://127.0.0.1:9/v1', join(scratch(), 'run'), flag, value));
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^metrl: error: .*${pattern.source}.*\\n$`));
    }
  });
});

describe('metrl evaluate --metbench-files', () => {
  it('writes a harness run folder that the harness layout reader scores back to the same summary.json', async () => {
    const up = await serve((i) => (i === 2 ? { kind: 'answer', text: 'FINAL ANSWER: shell #2' } : { kind: 'answer' }));
    const out = join(scratch(), 'run');
    const result = await metrl([...args(up.url, out, '--metbench-files', '--modality', 'text,image')]);
    expect(result.code, result.stderr).toBe(0);
    const dir = join(out, 'metbench');
    const text = rows(join(dir, 'shell-text.jsonl'));
    expect(text).toHaveLength(4);
    expect(Object.keys(text[0])).toEqual([
      'domain',
      'modality',
      'prompt',
      'example_id',
      'source_row',
      'fingerprint',
      'target',
      'initial_state',
      'response',
      'finish_reason',
      'usage',
    ]);
    expect(typeof text[0].target).toBe('number'); // the published set's integers
    expect(readFileSync(join(dir, 'shell-text.jsonl'), 'utf8').split('\n')[0]).toMatch(/^\{"domain": "shell", /);
    const written = readFileSync(join(dir, 'summary.json'), 'utf8');
    expect(Object.keys(JSON.parse(written))).toEqual(['shell/text', 'shell/image']);
    expect(JSON.parse(written)['shell/text']).toMatchObject({
      count: 4,
      expected: 4,
      status: 'complete',
      accuracy: 1.0,
    });
    expect(written).toContain('"accuracy": 1.0,');
    const rescored = await metrl(['score', dir, '--format', 'metbench']);
    expect(rescored.code, rescored.stderr).toBe(0);
    expect(rescored.stdout).toBe(written);
  });

  it('after a fatal stop the unasked items are Aborted error rows, as the harness writes them', async () => {
    const up = await serve((i) => (i === 2 ? { kind: 'status', status: 401 } : { kind: 'answer' }));
    const out = join(scratch(), 'run');
    const result = await metrl(args(up.url, out, '--metbench-files'));
    expect(result.code).toBe(2);
    const written = rows(join(out, 'metbench', 'shell-text.jsonl'));
    expect(written.map((r) => r.error ?? 'ok')).toEqual(['ok', 'ok', 'Aborted', 'Aborted']);
    const summary = JSON.parse(readFileSync(join(out, 'metbench', 'summary.json'), 'utf8'))['shell/text'];
    expect(summary).toMatchObject({ count: 2, completed: 2, errors: 2, expected: 4, status: 'incomplete' });
  });

  it('refuses settings a harness folder cannot hold, before asking anything', async () => {
    const up = await serve(() => ({ kind: 'answer' }));
    for (const [more, pattern] of [
      [['--prompt', 'zero-shot,cot'], /one setting per domain and modality/],
      [['--modality', 'mixed', '--image-ratio', '0.5'], /not mixed/],
      [['--domain=boxes'], /chess, shell and minecraft only/],
    ] as const) {
      const out = join(scratch(), 'run');
      const base = args(up.url, out, '--metbench-files', ...more);
      // one --domain only: the boxes case replaces shell
      const command =
        more[0] === '--domain=boxes' ? base.filter((a, i) => a !== 'shell' && base[i + 1] !== 'shell') : base;
      const result = await metrl(command);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`^metrl: error: --metbench-files: .*${pattern.source}`));
      expect(existsSync(out)).toBe(false);
    }
    expect(up.requests).toHaveLength(0);
  });
});
