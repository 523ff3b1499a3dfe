// metrl's scoring against the MET-Bench harness's own results on the same responses. The fixture folder is a harness
// run folder: the response files (its row layout, with failed rows, a repeated example_id, a truncated answer, integer
// shell states) and what the harness computed from them: its metbench/scoring.py, confidence.py and evaluate.py's
// score path at 16f2bf30, run with python-chess 1.11.2 on CPython 3.11.7, NumPy 2.4 and SciPy 1.17 (statsmodels was
// not installable there: its proportion_confint Wilson branch, a dozen lines, stood in verbatim) (harness-rows.jsonl:
// its parse and score_single_prediction_* result per answered row; harness-score.json: its `score` command's output
// per file; summary.json: summarize() of each file as its run writes it). Each case states the verdict and its rule
// (tests/rewards/metbench-cases.ts); here the stated verdict, the harness's recorded one and metrl's must all agree.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseChessAnswer, scoreChess } from '../../rewards/chess.ts';
import { normalFen } from '../../rewards/fen.ts';
import { parseChoiceAnswer } from '../../rewards/choice-answer.ts';
import { getEnv } from '../../envs/registry.ts';
import { summarizeScores } from '../../core/summary.ts';
import type { HarnessRow, ScoredRow } from '../../core/score.ts';
import { CHESS_CASES, MINECRAFT_CASES, SHELL_CASES } from './metbench-cases.ts';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'metbench-harness');
const jsonl = (name: string): Record<string, any>[] =>
  readFileSync(join(FIXTURE, name), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
interface HarnessResult {
  file: string;
  line: number;
  example_id: string;
  parsed: string | number | null;
  result: HarnessRow;
}
const recorded = jsonl('harness-rows.jsonl') as HarnessResult[];
const byId = new Map(recorded.map((r) => [r.example_id, r]));
const FILES = ['chess-text.jsonl', 'shell-text.jsonl', 'shell-image.jsonl', 'minecraft-text.jsonl'];

describe('chess answers: the stated verdict, the harness and metrl agree', () => {
  for (const c of CHESS_CASES) {
    it(`${c.id}: ${c.parsed === null ? 'invalid' : 'parsed'} (${c.why})`, () => {
      const harness = byId.get(`chess-${c.id}`)!;
      expect(harness.parsed).toBe(c.parsed);
      const parsed = parseChessAnswer(c.response);
      expect(parsed ? normalFen(parsed) : null).toBe(c.parsed);
      const score = scoreChess({ target: c.target, response: c.response, initialState: c.initial ?? undefined });
      expect(score.harness).toEqual(harness.result);
      expect(score.prediction).toBe(c.parsed);
    });
  }
});

describe('choice answers (shell 1-3, minecraft 1-4): the stated verdict, the harness and metrl agree', () => {
  for (const [domain, cases, maximum] of [
    ['shell', SHELL_CASES, 3],
    ['minecraft', MINECRAFT_CASES, 4],
  ] as const) {
    for (const c of cases) {
      it(`${domain} ${c.id}: ${c.choice ?? 'invalid'} (${c.why})`, () => {
        const harness = byId.get(`${domain}-${c.id}`)!;
        expect(harness.parsed).toBe(c.choice);
        expect(parseChoiceAnswer(c.response, maximum)).toBe(c.choice);
      });
    }
  }
});

/** A response file's rows as the harness's result rows read into metrl's scorer. */
async function scoredRows(file: string): Promise<{ line: number; row: Record<string, any>; scored: ScoredRow }[]> {
  const out = [];
  for (const [i, row] of jsonl(file).entries()) {
    if (row.error) continue;
    const env = await getEnv(row.domain);
    const input = {
      target: String(row.target),
      response: row.response ?? '',
      ...(row.initial_state !== null ? { initialState: String(row.initial_state) } : {}),
    };
    out.push({ line: i + 1, row, scored: { input, score: env.score(input), finishReason: row.finish_reason } });
  }
  return out;
}

describe('every answered row: metrl computes the harness row exactly', () => {
  for (const file of FILES) {
    it(file, async () => {
      const rows = await scoredRows(file);
      const want = recorded.filter((r) => r.file === file);
      expect(rows.map((r) => r.line)).toEqual(want.map((r) => r.line));
      rows.forEach((r, i) => expect(r.scored.score.harness, `line ${r.line}`).toEqual(want[i].result));
    });
  }
});

describe("summaries: metrl's equal the harness's, point estimates and intervals", () => {
  const score = JSON.parse(readFileSync(join(FIXTURE, 'harness-score.json'), 'utf8'));
  for (const file of FILES) {
    it(file, async () => {
      const all = jsonl(file);
      // The harness's score command keeps the last row of each example_id (a resumed run's latest attempt).
      const last = new Map(all.map((row, i) => [row.example_id, i]));
      const kept = [...last.values()];
      const answered = (await scoredRows(file)).filter((r) => kept.includes(r.line - 1));
      const errors = kept.filter((i) => all[i].error).length;
      const env = await getEnv(all[0].domain);
      const summary = summarizeScores(
        env,
        answered.map((r) => r.scored),
        { clusterOf: (_row, i) => answered[i].row.example_id, errors },
      );
      // Same operations in the same order as Python: equal to the last bit.
      expect(summary.harness).toEqual(score[file]);
      expect(summary.accuracy).toBe(score[file].accuracy);
      expect(summary.invalid).toBe(score[file].invalid_pred_count);
      expect(summary.ci95?.low ?? null).toBe(score[file].accuracy_ci_lower);
      expect(summary.ci95?.high ?? null).toBe(score[file].accuracy_ci_upper);
    });
  }

  it('chess: changed squares pooled over squares (not a mean of row ratios), clusters by example (not by board)', async () => {
    const rows = await scoredRows('chess-text.jsonl');
    const env = await getEnv('chess');
    const s = summarizeScores(
      env,
      rows.map((r) => r.scored),
      { clusterOf: (_row, i) => rows[i].row.example_id },
    );
    const right = rows.reduce((n, r) => n + r.scored.score.harness!.changed_successes!, 0);
    const changed = rows.reduce((n, r) => n + r.scored.score.harness!.changed_trials!, 0);
    expect(s.metrics.changedSquareAccuracy).toBe(right / changed);
    const ratios = rows
      .map((r) => r.scored.score.metrics.changedSquareAccuracy as number | null)
      .filter((v) => v !== null);
    expect(Math.abs(right / changed - ratios.reduce((a, b) => a + b, 0) / ratios.length)).toBeGreaterThan(0.001);
    // Clustering the transposed examples (same initial state and target) into one board moves the interval.
    const byBoard = summarizeScores(
      env,
      rows.map((r) => r.scored),
      { clusterOf: (row) => `${row.input.initialState}|${row.input.target}` },
    );
    expect(byBoard.ci95!.low).not.toBe(s.ci95!.low);
  });
});
