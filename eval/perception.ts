// Scoring the perception task (Table 4: one image action → its text action) and reading transcriptions for the
// cascade (Table 3). The answer is cleaned the way the reference parsers clean final answers (markdown, quotes,
// `\boxed{}`, a "FINAL ANSWER:" prefix, trailing punctuation), then the environment reads it as exactly one action of
// its form (Env.readPerceptionAnswer), in the canonical form its targets take. Scoring is exact match on that form.
import type { Score } from '../core/score.ts';
import type { Env } from '../envs/env.ts';

/** Clean an answer down to its last meaningful line, without decoration. */
export function cleanAnswer(response: string): string {
  const lines = response
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  // Prefer the line with an explicit final-answer marker (read bottom-up), else the last line.
  const marked = [...lines].reverse().find((l) => /final answer\s*:/i.test(l));
  let text = (marked ?? lines[lines.length - 1] ?? '').replace(/^.*final answer\s*:/i, '');
  text = text.replace(/\\boxed\{([^}]*)\}/g, '$1').replace(/[`*"'“”‘’{}[\]()]/g, '');
  text = text.replace(/^(?:move|swap|answer)\s*:\s*/i, '').replace(/[.!]+$/, '');
  return text.trim().toLowerCase().replace(/\s+/g, ' ');
}

/** The action a response names, in canonical form, or null when it names none (or is ambiguous). */
export function parseAction(env: Env, response: string): string | null {
  const text = cleanAnswer(response);
  if (env.readPerceptionAnswer) return env.readPerceptionAnswer(text);
  return text === '' ? null : text;
}

/** Canonical form of a target action, so that two ways of writing one action (shell: "3 swap 1") compare equal. */
export function canonicalAction(env: Env, action: string): string {
  return parseAction(env, action) ?? action.trim().toLowerCase();
}

export function scorePerception(env: Env, response: string, target: string): Score {
  const prediction = parseAction(env, response);
  const correct = prediction !== null && prediction === canonicalAction(env, target);
  return {
    reward: correct ? 1 : 0,
    valid: prediction !== null,
    prediction,
    metrics: { exact: correct, invalid: prediction === null },
  };
}
