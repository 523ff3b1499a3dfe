// Minecraft forward-prediction reward (MET-Bench's third domain): the response names one of the candidate next states,
// 1-4, and scores 1 when it is the correct choice, else 0. Pure: no I/O, no randomness. Parsing is the harness's choice
// grammar (rewards/choice-answer.ts, metbench/scoring.py's parse_minecraft_choice); the target is read as Python's
// int() reads it, as score_single_prediction_minecraft does.
import { UserError } from '../core/errors.ts';
import type { Score, ScoreInput } from '../core/score.ts';
import { parseChoiceAnswer } from './choice-answer.ts';
import { pyInt } from './python-str.ts';

/** How many candidate next states a MET-Bench Minecraft task offers. */
export const MINECRAFT_CHOICES = 4;

/** The predicted choice ("1"-"4"), or null when the response is ambiguous or malformed. */
export function parseChoice(response: string): string | null {
  const choice = parseChoiceAnswer(response, MINECRAFT_CHOICES);
  return choice === null ? null : String(choice);
}

/** Binary reward 1[choice = target]; an unparseable answer is invalid and scores 0. */
export function scoreMinecraft(input: ScoreInput): Score {
  const target = pyInt(input.target);
  if (target === null)
    throw new UserError(
      `minecraft target must be a choice 1-${MINECRAFT_CHOICES}, got ${JSON.stringify(input.target)}`,
    );
  const prediction = parseChoice(input.response);
  const exact = prediction !== null && BigInt(prediction) === target;
  return {
    reward: exact ? 1 : 0,
    valid: prediction !== null,
    prediction,
    metrics: { exact },
    harness: { invalid_pred: prediction === null ? 1 : 0, successes: exact ? 1 : 0, trials: 1 },
  };
}
