// Scoring the perception task (Table 4: one image action → its text action) and reading transcriptions for the
// cascade (Table 3). The answer is cleaned the way the reference parsers clean final answers (markdown, quotes,
// `\boxed{}`, a "FINAL ANSWER:" prefix, trailing punctuation), then it must be exactly one action of the domain's
// form: a UCI move (chess) or "x swap y" (shell). Scoring is exact match on the action text; a shell swap is an
// unordered pair, so "3 swap 1" reads as "1 swap 3" (both name the same swap).
import type { Domain } from '../core/episode.ts';
import type { Score } from '../core/score.ts';

const CHESS_MOVE = /^[a-h][1-8][a-h][1-8][qrbn]?$/;
const SHELL_SWAP = /^(?:shells?\s+)?([1-3])\s*(?:swap|-|,|and|↔|<->)\s*([1-3])$/;

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
export function parseAction(domain: Domain, response: string): string | null {
  const text = cleanAnswer(response);
  if (domain === 'chess') return CHESS_MOVE.test(text) ? text : null;
  if (domain === 'shell') {
    const m = SHELL_SWAP.exec(text);
    if (!m || m[1] === m[2]) return null;
    const [a, b] = [m[1], m[2]].sort();
    return `${a} swap ${b}`;
  }
  return text === '' ? null : text;
}

/** Canonical form of a target action, so that "3 swap 1" and "1 swap 3" compare equal. */
export function canonicalAction(domain: Domain, action: string): string {
  return parseAction(domain, action) ?? action.trim().toLowerCase();
}

export function scorePerception(domain: Domain, response: string, target: string): Score {
  const prediction = parseAction(domain, response);
  const correct = prediction !== null && prediction === canonicalAction(domain, target);
  return {
    reward: correct ? 1 : 0,
    valid: prediction !== null,
    prediction,
    metrics: { exact: correct, invalid: prediction === null },
  };
}
