// Core contract: what a reward function reads (ScoreInput) and returns (Score), and a scored row as summaries see it.
// rewards/ implements it, envs/ wires it into each environment, eval/ and trainer/ consume it.

/** Scoring result of one response. `reward` in [0, 1] is what GRPO optimises; `metrics` feed the summaries. */
export interface Score {
  reward: number;
  /** False when the answer could not be parsed (reward 0). */
  valid: boolean;
  /** The parsed prediction in canonical form, or null when invalid. */
  prediction: string | null;
  metrics: Record<string, number | boolean | null>;
  /** The MET-Bench harness's own per-row result, for the domains it scores (chess, shell, minecraft). */
  harness?: HarnessRow;
}

/**
 * One row as metbench/scoring.py's score_single_prediction_* returns it, under its key names: what the harness's
 * aggregate_scores adds up (core/harness-summary.ts). Chess adds the exact-match, legal-board and changed-square counts.
 */
export interface HarnessRow {
  invalid_pred: number;
  successes: number;
  trials: number;
  exact_match?: number;
  exact_board_match?: number;
  exact_match_trials?: number;
  legal_board?: number;
  changed_sq_successes?: number;
  changed_sq_trials?: number;
  changed_successes?: number;
  changed_trials?: number;
}

/** A row to score: what `metrl score` reads and evaluation writes. */
export interface ScoreInput {
  target: string;
  response: string;
  initialState?: string;
  meta?: Record<string, unknown>;
}

/** A scored item, as summaries see it. */
export interface ScoredRow {
  input: ScoreInput;
  score: Score;
  /** Why generation stopped ('stop', 'length' …) when known: the harness counts 'length' as truncated. */
  finishReason?: string | null;
}
