// MCST reward (paper §4 "Evaluation Metric"): exact match after normalisation, by the answer's kind — a name (or
// "no one"), True/False, a place, a number (digits or a number word), a compass direction, or coordinates "(x, y)".
// Normalisation is lenient about surface form ("on the desk", "Emma has it", "(5,7)", "facing north", "two") but
// an answer naming two candidates ("Emma or Noah") is invalid. The episode's meta (entities, places, answer kind,
// negation-blind answer) sharpens parsing when present; without it the target's shape decides the kind.
// Metrics: exact; negationBlind (a wrong answer equal to the answer the negated actions would have produced — the
// paper's "negation blindness"); initialCopy (the answer read off the initial state). Pure: no I/O, no randomness.
import { ANSWER_DECORATION, shortAnswerLine } from './final-answer.ts';
import type { Score, ScoreInput } from '../core/score.ts';

const NUMBER_WORDS = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
];
const DIRECTION_WORDS = ['north', 'east', 'south', 'west'];
const NO_ONE = /\b(?:no one|no-one|noone|nobody|none)\b/;

export type McstAnswerKind = 'name' | 'boolean' | 'place' | 'number' | 'direction' | 'coordinates' | 'text';

export interface McstVocabulary {
  entities?: readonly string[];
  places?: readonly string[];
}

function clean(text: string): string {
  return text
    .replace(ANSWER_DECORATION, ' ')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^answer\s*:\s*/, '')
    .replace(/[.!]+$/, '')
    .trim();
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Names from `names` that occur in `text` as whole words, leaving out those inside a longer match. */
function mentioned(text: string, names: readonly string[]): string[] {
  const found = names
    .map((n) => n.toLowerCase())
    .filter((n) => new RegExp(`(?:^|[^a-z0-9-])${escapeRegExp(n)}(?:$|[^a-z0-9-])`).test(text));
  return [...new Set(found)].filter((n) => !found.some((m) => m !== n && m.includes(n)));
}

/** Infer the kind from a canonical target when the meta does not say. */
function inferKind(target: string): McstAnswerKind {
  if (/^(?:true|false)$/i.test(target)) return 'boolean';
  if (/^\d+$/.test(target)) return 'number';
  if (/^\(\d+, \d+\)$/.test(target)) return 'coordinates';
  if (DIRECTION_WORDS.includes(target.toLowerCase())) return 'direction';
  return 'text';
}

/** Canonical (lower-case) form of an answer of the given kind, or null when it does not read as one answer. */
export function normaliseMcstAnswer(
  answer: string,
  kind: McstAnswerKind,
  vocabulary: McstVocabulary = {},
): string | null {
  const text = clean(answer);
  if (text === '') return null;
  switch (kind) {
    case 'boolean': {
      const m = /^(true|false)\b/.exec(text);
      return m ? m[1] : null;
    }
    case 'number': {
      const digits = text.match(/\b\d+\b/g) ?? [];
      const words = NUMBER_WORDS.filter((w) => new RegExp(`\\b${w}\\b`).test(text)).map((w) =>
        String(NUMBER_WORDS.indexOf(w)),
      );
      const all = [...new Set([...digits.map((d) => String(Number(d))), ...words])];
      return all.length === 1 ? all[0] : null;
    }
    case 'coordinates': {
      const numbers = text.match(/-?\d+/g) ?? [];
      return numbers.length === 2 ? `(${Number(numbers[0])}, ${Number(numbers[1])})` : null;
    }
    case 'direction': {
      const found = DIRECTION_WORDS.filter((d) => new RegExp(`\\b${d}\\b`).test(text));
      return found.length === 1 ? found[0] : null;
    }
    case 'name': {
      const names = mentioned(text, vocabulary.entities ?? []);
      const noOne = NO_ONE.test(text);
      if (names.length === 1 && !noOne) return names[0];
      if (names.length === 0 && noOne) return 'no one';
      if (names.length > 1 || (names.length === 1 && noOne)) return null;
      return bare(text);
    }
    case 'place': {
      const places = mentioned(text, vocabulary.places ?? []);
      const names = mentioned(text, vocabulary.entities ?? []);
      if (places.length + names.length === 1) return places[0] ?? names[0];
      if (places.length + names.length > 1) return null;
      return bare(text);
    }
    case 'text':
      return bare(text);
  }
}

/** A free answer without leading filler, prepositions and articles: "it was on the desk" → "desk". */
function bare(text: string): string | null {
  const stripped = text
    .replace(/^(?:it|they|he|she)\s+(?:is|was|are|were)\s+/, '')
    .replace(/^(?:on|in|at|by|under|inside|with)\s+/, '')
    .replace(/^(?:the|a|an)\s+/, '')
    .trim();
  return stripped === '' ? null : stripped;
}

function vocabularyOf(meta: Record<string, unknown> | undefined): McstVocabulary {
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined);
  return { entities: strings(meta?.entities), places: strings(meta?.places) };
}

export function scoreMcst(input: ScoreInput): Score {
  const meta = input.meta;
  const kind = (typeof meta?.answerKind === 'string' ? meta.answerKind : inferKind(input.target)) as McstAnswerKind;
  const vocabulary = vocabularyOf(meta);
  const target = normaliseMcstAnswer(input.target, kind, vocabulary);
  if (target === null) throw new Error(`mcst: unreadable target ${JSON.stringify(input.target)}`);
  const text = shortAnswerLine(input.response);
  const prediction = text === null ? null : normaliseMcstAnswer(text, kind, vocabulary);
  if (prediction === null) {
    return {
      reward: 0,
      valid: false,
      prediction: null,
      metrics: { exact: false, negationBlind: null, initialCopy: null },
    };
  }
  const exact = prediction === target;
  const reference = (key: string) => {
    const value = meta?.[key];
    return typeof value === 'string' ? normaliseMcstAnswer(value, kind, vocabulary) : null;
  };
  const blind = reference('negationBlindAnswer');
  const initial = reference('initialAnswer');
  return {
    reward: exact ? 1 : 0,
    valid: true,
    prediction,
    metrics: {
      exact,
      negationBlind: blind === null || blind === target ? null : prediction === blind,
      initialCopy: initial === null || initial === target ? null : prediction === initial,
    },
  };
}
