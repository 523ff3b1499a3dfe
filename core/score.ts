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
}
