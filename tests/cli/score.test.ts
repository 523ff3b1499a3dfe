// `metrl score` through the real binary: the printed JSON summary (accuracy, Wilson interval, invalid, exact match,
// skipped rows, per-domain sections), --out rows carrying reward and metrics, a generated dataset answered and
// rescored end to end, the MET-Bench harness's own files rescored to its own output byte for byte, and each bad row →
// exit 2 with one line naming its line number.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { wilsonBounds } from '../../core/stats.ts';
import { availableDomains } from '../../envs/registry.ts';

function jsonl(rows: unknown[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

describe('metrl score', () => {
  it('prints a per-domain summary and writes scored rows with --out', async () => {
    const dir = scratchDir('score');
    const file = join(dir, 'answers.jsonl');
    writeFileSync(
      file,
      jsonl([
        { id: 'a', domain: 'shell', target: '2', response: 'Thinking…\nFINAL ANSWER: 2' },
        { id: 'b', domain: 'shell', target: '1', response: 'FINAL ANSWER: 3' },
        { id: 'c', domain: 'shell', target: 3, response: '3' },
        { id: 'd', domain: 'shell', target: '1', response: 'FINAL ANSWER: 1 or 2', meta: { ballMoves: 4 } },
        { id: 'e', domain: 'shell', target: '1', response: null, status: 'error' },
      ]),
    );
    const out = join(dir, 'scored.jsonl');
    const result = await metrl(['score', file, '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.count).toBe(4);
    expect(summary.skipped).toEqual({ errors: 1, perception: 0, replaced: 0 });
    const shell = summary.domains.shell;
    expect(shell).toMatchObject({ count: 4, accuracy: 0.5, invalid: 1, exactMatch: 0.5 });
    expect(shell.ci95).toEqual({ ...wilsonBounds(2, 4), method: 'wilson' });
    expect(shell.harness).toMatchObject({ completed: 4, errors: 1, truncated: 0 });
    const scored = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(scored.map((r) => [r.id, r.reward, r.valid, r.prediction])).toEqual([
      ['a', 1, true, '2'],
      ['b', 0, true, '3'],
      ['c', 1, true, '3'],
      ['d', 0, false, null],
      ['e', null, null, null],
    ]);
    expect(scored[0].metrics).toEqual({ exact: true });
    expect(scored[4].status).toBe('error'); // other fields pass through untouched
  });

  it('rescores a generated dataset answered by a perfect and a wrong "model"', async () => {
    const dir = scratchDir('roundtrip');
    const data = join(dir, 'data');
    expect(
      (
        await metrl([
          'generate',
          '--domain',
          'shell',
          '--modality',
          'text',
          '--n',
          '30',
          '--actions',
          '5',
          '--out',
          data,
        ])
      ).code,
    ).toBe(0);
    const rows = readFileSync(join(data, 'metadata.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const answered = rows.map((r, i) => ({
      ...r,
      response: i < 20 ? `FINAL ANSWER: ${r.target}` : `FINAL ANSWER: ${(Number(r.target) % 3) + 1}`,
    }));
    writeFileSync(join(dir, 'answers.jsonl'), jsonl(answered));
    const result = await metrl(['score', join(dir, 'answers.jsonl')]);
    expect(result.code, result.stderr).toBe(0);
    const shell = JSON.parse(result.stdout).domains.shell;
    expect(shell.count).toBe(30);
    expect(shell.accuracy).toBeCloseTo(20 / 30);
    expect(shell.invalid).toBe(0);
    expect(Object.keys(shell.breakdown.accuracyByBallMoves).length).toBeGreaterThan(1);
  });

  const bad: Array<[string, string, RegExp]> = [
    [
      'a line that is not JSON',
      '{"domain":"shell","target":"1","response":"1"}\n{"domain": "shell",\n',
      /answers\.jsonl:2: not valid JSON/,
    ],
    [
      'a row without target',
      '{"domain":"shell","target":"1","response":"1"}\n\n{"domain":"shell","response":"1"}\n',
      /answers\.jsonl:3: missing field 'target'/,
    ],
    ['a row without response', '{"domain":"shell","target":"1"}\n', /answers\.jsonl:1: missing field 'response'/],
    ['a row without domain', '{"target":"1","response":"1"}\n', /answers\.jsonl:1: missing field 'domain'/],
    ['a row that is not an object', '[1, 2]\n', /answers\.jsonl:1: not a JSON object/],
    ['an unknown domain', '{"domain":"go","target":"1","response":"1"}\n', /answers\.jsonl:1: unknown domain 'go'/],
    [
      'a target the domain cannot have',
      '{"domain":"shell","target":"7","response":"1"}\n',
      /answers\.jsonl:1: shell target/,
    ],
    ['an empty file', '', /no rows to score/],
  ];
  it.concurrent.each(bad)('%s → exit 2, one line naming it', async (_name, content, pattern) => {
    const dir = scratchDir('scorebad');
    const file = join(dir, 'answers.jsonl');
    writeFileSync(file, content);
    const out = join(dir, 'out.jsonl');
    expectUserError(await metrl(['score', file, '--out', out]), pattern);
    expect(existsSync(out)).toBe(false);
  });

  it("reads the harness's rows: integer states, failed requests without a response, an example's last row wins", async () => {
    const dir = scratchDir('harness-rows');
    const file = join(dir, 'shell-text.jsonl');
    const row = (id: string, more: object) => ({
      domain: 'shell',
      modality: 'text',
      example_id: id,
      target: 2,
      initial_state: 1,
      ...more,
    });
    writeFileSync(
      file,
      jsonl([
        row('a', { response: 'FINAL ANSWER: 2', finish_reason: 'stop' }),
        row('b', { error: 'APIStatusError', status_code: 500 }),
        row('c', { response: 'FINAL ANSWER: 1', finish_reason: 'length' }),
        row('b', { response: 'FINAL ANSWER: 2', finish_reason: 'stop' }), // a resumed run's retry replaces the failure
        row('a', { error: 'RateLimitError', status_code: 429 }), // … and a later failure replaces an answer
      ]),
    );
    const result = await metrl(['score', file]);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.skipped).toEqual({ errors: 1, perception: 0, replaced: 2 });
    expect(summary.domains.shell.harness).toMatchObject({
      count: 2,
      accuracy: 0.5,
      completed: 2,
      errors: 1,
      truncated: 1,
    });
  });

  it("a harness run folder and its files give exactly the harness's own output (--format metbench)", async () => {
    const fixture = join(import.meta.dirname, '..', 'fixtures', 'metbench-harness');
    const folder = await metrl(['score', fixture, '--format', 'metbench']);
    expect(folder.code, folder.stderr).toBe(0);
    expect(folder.stdout).toBe(readFileSync(join(fixture, 'summary.json'), 'utf8'));
    const printed = JSON.parse(readFileSync(join(fixture, 'harness-score.json'), 'utf8'));
    const file = await metrl(['score', join(fixture, 'chess-text.jsonl'), '--format', 'metbench']);
    expect(file.code, file.stderr).toBe(0);
    expect(JSON.parse(file.stdout)).toEqual(printed['chess-text.jsonl']);
    expect(file.stdout).toContain('"accuracy": 0.5534274193548387,'); // Python's float formatting, 1.0 stays 1.0
    const metrlFormat = JSON.parse((await metrl(['score', fixture])).stdout);
    expect(metrlFormat.files['chess/text'].domains.chess.harness).toEqual(printed['chess-text.jsonl']);
  });

  it('--format metbench refuses domains the harness does not score; --out needs a file', async () => {
    const dir = scratchDir('score-format');
    const file = join(dir, 'answers.jsonl');
    writeFileSync(file, jsonl([{ domain: 'boxes', target: 'the car', response: 'FINAL ANSWER: the car' }]));
    const out = join(dir, 'out.jsonl');
    expectUserError(await metrl(['score', file, '--format', 'metbench', '--out', out]), /does not score this domain/);
    expect(existsSync(out)).toBe(false);
    expectUserError(await metrl(['score', dir, '--out', out]), /--out writes the rows of one file/);
    expectUserError(await metrl(['score', file, '--format', 'paper']), /unknown format/);
  });

  it('a missing file → exit 2', async () => {
    expectUserError(await metrl(['score', join(scratchDir('none'), 'nope.jsonl')]), /nope\.jsonl: no such file/);
  });
});

const chess = availableDomains().includes('chess');
describe.skipIf(!chess)('metrl score (chess and mixed domains)', () => {
  const start = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
  const afterE4 = 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1';

  it('summarises each domain separately, chess with an interval clustered by example', async () => {
    const dir = scratchDir('mixed');
    const file = join(dir, 'answers.jsonl');
    writeFileSync(
      file,
      jsonl([
        { domain: 'chess', target: afterE4, initial_state: start, response: `FINAL ANSWER: ${afterE4}` },
        { domain: 'chess', target: afterE4, initialState: start, response: `FINAL ANSWER: ${start}` },
        { domain: 'chess', target: afterE4, response: 'no idea' },
        { domain: 'shell', target: '1', response: '1' },
        { domain: 'shell', target: '2', response: '1' },
      ]),
    );
    const result = await metrl(['score', file]);
    expect(result.code, result.stderr).toBe(0);
    const { domains } = JSON.parse(result.stdout);
    expect(Object.keys(domains).sort()).toEqual(['chess', 'shell']);
    expect(domains.shell).toMatchObject({ count: 2, accuracy: 0.5 });
    const c = domains.chess;
    expect(c.count).toBe(3);
    expect(c.invalid).toBe(1);
    // perfect (1), the start position (62/64 squares right), invalid (0)
    expect(c.accuracy).toBeCloseTo((1 + 62 / 64 + 0) / 3, 10);
    expect(c.ci95.method).toBe('mean');
    expect(c.exactMatch).toBeCloseTo(1 / 3, 10);
    expect(c.metrics.legalBoard).toBeCloseTo(2 / 3, 10);
    // pooled over squares, as the harness: 2 of e2/e4 right, then 0 of 2, then 0 of 2 (no initial state: the start)
    expect(c.metrics.changedSquareAccuracy).toBeCloseTo(2 / 6, 10);
  });

  it('--chess-answer decides the parsing for every row; --format metbench is always the harness', async () => {
    const dir = scratchDir('score-lenient');
    const file = join(dir, 'answers.jsonl');
    writeFileSync(
      file,
      jsonl([
        { domain: 'chess', example_id: 'a', target: afterE4, initial_state: start, response: afterE4 },
        {
          domain: 'chess',
          example_id: 'b',
          target: afterE4,
          initial_state: start,
          response: afterE4,
          meta: { answerParsing: 'lenient' },
        },
      ]),
    );
    const invalid = async (...flags: string[]) => {
      const result = await metrl(['score', file, ...flags]);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };
    expect((await invalid()).domains.chess.invalid).toBe(1); // as recorded: row b asked for the opt-in
    expect((await invalid('--chess-answer', 'reference')).domains.chess).toMatchObject({
      invalid: 2,
      breakdown: { answerParsing: 'reference' },
    });
    const lenient = (await invalid('--chess-answer', 'lenient')).domains.chess;
    expect(lenient.invalid).toBe(0);
    expect(lenient.breakdown.answerParsing).toMatch(/^lenient/);
    expect((await invalid('--format', 'metbench')).invalid_pred_count).toBe(2);
    expectUserError(
      await metrl(['score', file, '--format', 'metbench', '--chess-answer', 'lenient']),
      /--chess-answer lenient is not its parsing/,
    );
  });

  it('a bad initial_state FEN → exit 2 naming the line', async () => {
    const dir = scratchDir('chessbad');
    const file = join(dir, 'answers.jsonl');
    writeFileSync(
      file,
      jsonl([
        { domain: 'shell', target: '1', response: '1' },
        { domain: 'chess', target: afterE4, initial_state: 'not a fen', response: 'x' },
      ]),
    );
    expectUserError(await metrl(['score', file]), /answers\.jsonl:2: .*initial_state/);
  });
});
