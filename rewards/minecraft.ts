// Minecraft forward-prediction reward (MET-Bench's third domain): the response names one of the candidate next states,
// 1-4, and scores 1 when it is the correct choice, else 0. Pure: no I/O, no randomness.
//
// Parsing follows the MET-Bench harness's choice parser (metbench/scoring.py, read for the grammar, not copied): the
// answer is the first line after the LAST "final answer:" marker (the whole response without a marker); \boxed,
// backticks, asterisks, braces and brackets are stripped; what is left must be exactly a choice, optionally written
// "choice 3", "candidate 3" or "shell 3" (a "#" may follow the word), optionally ending in "." or "!". Anything else
// ("1 or 2", "5", "3 because…") is invalid and scores 0. As for the shell game (rewards/shell.ts), the marker may carry
// markdown emphasis before its colon and a line holding only decoration after it is skipped.
import { UserError } from '../core/errors.ts';
import type { Score, ScoreInput } from '../core/score.ts';
import { meaningfulLines, textAfterLastMarker } from './final-answer.ts';

/** How many candidate next states a MET-Bench Minecraft task offers. */
export const MINECRAFT_CHOICES = 4;

const STRIP = /\\boxed|[`*{}[\]]/g;

/** The predicted choice ("1"-"max"), or null when the response is ambiguous or malformed. */
export function parseChoice(response: string, max = MINECRAFT_CHOICES): string | null {
  const after = textAfterLastMarker(response);
  const line = after === null ? response.trim() : (meaningfulLines(after, STRIP)[0] ?? '');
  const cleaned = line.replace(STRIP, '').trim();
  const match = new RegExp(`^(?:(?:choice|candidate|shell)\\s*#?\\s*)?([1-${max}])[.!]?$`, 'i').exec(cleaned);
  return match ? match[1] : null;
}

/** Binary reward 1[choice = target]; an unparseable answer is invalid and scores 0. */
export function scoreMinecraft(input: ScoreInput): Score {
  const target = input.target.trim();
  if (!/^[1-9]$/.test(target))
    throw new UserError(
      `minecraft target must be a choice 1-${MINECRAFT_CHOICES}, got ${JSON.stringify(input.target)}`,
    );
  const prediction = parseChoice(input.response);
  const exact = prediction === target;
  return { reward: exact ? 1 : 0, valid: prediction !== null, prediction, metrics: { exact } };
}
