// The shell game reward: the shell the ball ends under, parsed by the MET-Bench harness's choice grammar
// (rewards/choice-answer.ts, exactly metbench/scoring.py's), scores 1 if it is the target, else 0. Pure. The target must
// be "1", "2" or "3" as written (the harness refuses anything else); an unparseable answer is invalid and scores 0.
import { UserError } from '../core/errors.ts';
import type { Score, ScoreInput } from '../core/score.ts';
import { parseChoiceAnswer } from './choice-answer.ts';

const SHELL_ANSWERS = ['1', '2', '3'] as const;
export type ShellAnswer = (typeof SHELL_ANSWERS)[number];

/** The predicted shell ("1"-"3"), or null when the response is ambiguous or malformed. */
export function parseShellAnswer(response: string): ShellAnswer | null {
  const choice = parseChoiceAnswer(response, 3);
  return choice === null ? null : (String(choice) as ShellAnswer);
}

function isShellAnswer(value: string): value is ShellAnswer {
  return (SHELL_ANSWERS as readonly string[]).includes(value);
}

/** Binary reward 1[prediction = target] (score_single_prediction_shell). */
export function scoreShell(input: ScoreInput): Score {
  if (!isShellAnswer(input.target))
    throw new UserError(`shell target must be "1", "2" or "3", got ${JSON.stringify(input.target)}`);
  const prediction = parseShellAnswer(input.response);
  const exact = prediction === input.target;
  return {
    reward: exact ? 1 : 0,
    valid: prediction !== null,
    prediction,
    metrics: { exact },
    harness: { invalid_pred: prediction === null ? 1 : 0, successes: exact ? 1 : 0, trials: 1 },
  };
}
