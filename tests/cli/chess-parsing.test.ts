// Chess scores comparable with MET-Bench's: by default a response that is a bare FEN (no "final answer" line) is
// invalid, as in the harness; `--chess-answer lenient` accepts it, and the summary records which parsing was used.
// Through the real binary (generate → rows with responses → score).
import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir } from './helpers.ts';

async function bareFenSummary(
  extraFlags: string[],
): Promise<{ invalid: number; accuracy: number; breakdown: { answerParsing: string } }> {
  const dir = scratchDir('chess-parsing');
  const data = join(dir, 'data');
  const generated = await metrl([
    'generate',
    '--domain',
    'chess',
    '--modality',
    'text',
    '--n',
    '3',
    '--actions',
    '2',
    '--out',
    data,
    ...extraFlags,
  ]);
  expect(generated.code).toBe(0);
  const rows = readFileSync(join(data, 'metadata.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const answers = join(dir, 'answers.jsonl');
  writeFileSync(answers, rows.map((r) => JSON.stringify({ ...r, response: r.target })).join('\n') + '\n');
  const scored = await metrl(['score', answers]);
  expect(scored.stderr).toBe('');
  return (
    JSON.parse(scored.stdout) as {
      domains: { chess: { invalid: number; accuracy: number; breakdown: { answerParsing: string } } };
    }
  ).domains.chess;
}

describe.concurrent('chess answer parsing', () => {
  it('by default a bare FEN is invalid, and the summary says the parsing is the reference', async () => {
    const summary = await bareFenSummary([]);
    expect(summary.invalid).toBe(3);
    expect(summary.breakdown.answerParsing).toBe('reference');
  });

  it('--chess-answer lenient accepts it, and the summary says so', async () => {
    const summary = await bareFenSummary(['--chess-answer', 'lenient']);
    expect(summary.invalid).toBe(0);
    expect(summary.accuracy).toBe(1);
    expect(summary.breakdown.answerParsing).toMatch(/^lenient: .*not the MET-Bench harness/);
  });
});
