// Shell game reward: parse the ball's final shell from a completion the way the MET-Bench reference evaluator does,
// and score it 1 if it is the target, else 0. Pure: no I/O, no randomness.
//
// Parsing (notes/benchmarks.md §1): after the LAST "final answer:" marker take the first line; strip \boxed,
// backticks, asterisks, braces and brackets; accept only a whole answer "2", "shell 2", "choice 2" or "#2",
// optionally followed by "." or "!". Anything else ("12", "1 or 2", "0", "2.5", "4", trailing words on the answer line)
// is invalid and scores 0. Without any marker the whole response must be such a bare answer.
// Two small, deliberate widenings, both unambiguous: the marker may carry markdown emphasis before its colon
// ("**Final Answer**: 2"), and LaTeX dollar signs are stripped like braces ("$\boxed{2}$").
import { meaningfulLines, textAfterLastMarker } from './final-answer.ts';
import { UserError } from '../core/errors.ts';
import type { Score, ScoreInput } from '../core/score.ts';

const SHELL_ANSWERS = ['1', '2', '3'] as const;
export type ShellAnswer = (typeof SHELL_ANSWERS)[number];

const STRIP = /\\boxed|[`*{}[\]$]/g;
const WHOLE_ANSWER = /^(?:(?:shell|choice)\s*|#\s*)?([1-3])\s*[.!]?$/i;

/** The line that holds the answer: the first non-empty line after the last marker, or the whole response. */
function answerLine(response: string): string {
  const after = textAfterLastMarker(response);
  if (after === null) return response.trim();
  // "FINAL ANSWER:\n2" puts the answer on the next line; markdown left over from the marker ("**") does not count.
  return meaningfulLines(after, STRIP)[0] ?? '';
}

/** The predicted shell ("1"-"3"), or null when the response is ambiguous or malformed. */
export function parseShellAnswer(response: string): ShellAnswer | null {
  const cleaned = answerLine(response).replace(STRIP, '').trim();
  const match = WHOLE_ANSWER.exec(cleaned);
  return match ? (match[1] as ShellAnswer) : null;
}

function isShellAnswer(value: string): value is ShellAnswer {
  return (SHELL_ANSWERS as readonly string[]).includes(value);
}

/** Binary reward 1[prediction = target]; an unparseable answer is invalid and scores 0. */
export function scoreShell(input: ScoreInput): Score {
  const target = input.target.trim();
  if (!isShellAnswer(target))
    throw new UserError(`shell target must be "1", "2" or "3", got ${JSON.stringify(input.target)}`);
  const prediction = parseShellAnswer(input.response);
  const exact = prediction === target;
  return { reward: exact ? 1 : 0, valid: prediction !== null, prediction, metrics: { exact } };
}
