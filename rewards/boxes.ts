// Boxes reward (Kim & Schuster §4.3): an answer is correct iff it names exactly the objects in the box. Parsing is
// lenient about surface form, as the paper's was: objects in any order, separated by commas and/or "and", with or
// without "the"/"a"; "nothing", "empty" or "none" for an empty box; an optional "Box N contains" / "Container X
// contains" echo of the question and trailing punctuation. The answer is the first non-empty line after the last
// "FINAL ANSWER:" marker, or the whole response when it is a single line without a marker. Naming an object twice is
// wrong (the box holds each object once). Pure: no I/O, no randomness.
import { ANSWER_DECORATION, shortAnswerLine } from './final-answer.ts';
import type { Score, ScoreInput } from '../core/score.ts';

const ECHO = /^(?:(?:box\s+\d+|container\s+[a-g])\s+)?(?:contains|holds|has)\b\s*:?\s*/;
const EMPTY =
  /^(?:nothing(?: at all)?|empty|none|no objects?|(?:it|the box|the container|box \d+|container [a-g])?\s*is empty)$/;
const SEPARATOR = /\s*(?:,|;|&|\band\b)\s*/;

/** Object names (lower case, without articles) in an answer, [] for an empty box, null when nothing parses. */
export function parseBoxContents(answer: string): string[] | null {
  let text = answer.replace(ANSWER_DECORATION, ' ').toLowerCase().replace(/\s+/g, ' ').trim();
  text = text.replace(/[.!]+$/, '').trim();
  text = text.replace(ECHO, '').trim();
  if (text === '') return null;
  if (EMPTY.test(text)) return [];
  const items = text
    .split(SEPARATOR)
    .map((item) => item.replace(/^(?:the|a|an)(?:\s+|$)/, '').trim())
    .filter((item) => item !== '');
  return items.length > 0 ? items : null;
}

/** Canonical form of a set of object names: "the a and the b" (sorted), or "nothing". */
function formatBoxContents(items: readonly string[]): string {
  return items.length === 0
    ? 'nothing'
    : [...items]
        .sort()
        .map((n) => `the ${n}`)
        .join(' and ');
}

function sameItems(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort();
  const y = [...b].sort();
  return x.every((v, i) => v === y[i]);
}

/** Binary exact-set reward; also reports whether the prediction repeats the box's initial contents. */
export function scoreBoxes(input: ScoreInput): Score {
  const target = parseBoxContents(input.target);
  if (target === null) throw new Error(`boxes: unreadable target ${JSON.stringify(input.target)}`);
  const text = shortAnswerLine(input.response);
  const predicted = text === null ? null : parseBoxContents(text);
  if (predicted === null) {
    return {
      reward: 0,
      valid: false,
      prediction: null,
      metrics: { exact: false, repeatsInitial: null, predictedCount: null },
    };
  }
  const exact = sameItems(predicted, target);
  const initialText = typeof input.meta?.initialContents === 'string' ? input.meta.initialContents : null;
  const initial = initialText === null ? null : parseBoxContents(initialText);
  return {
    reward: exact ? 1 : 0,
    valid: true,
    prediction: formatBoxContents(predicted),
    metrics: {
      exact,
      repeatsInitial: initial === null ? null : sameItems(predicted, initial),
      predictedCount: predicted.length,
    },
  };
}
