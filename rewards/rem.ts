// REM reward: the paper's keyword verification, applied to the answer after the last "FINAL ANSWER:" marker (or to
// the whole response when there is none): counting takes the first whole number; left/right needs exactly one of
// "left"/"right"; temporal exactly one of "before"/"after"/"same time"; comparison exactly one of the two entities
// (recognised by the words that tell them apart, plurals or not) or "equal". Binary reward. Pure. The breakdowns by
// category live in envs/rem/summary.ts.
import { meaningfulLines, textAfterLastMarker } from './final-answer.ts';
import type { Score, ScoreInput } from '../core/score.ts';

const REM_CATEGORY_NAMES = ['counting', 'comparison', 'left-right', 'temporal'] as const;
export type RemCategoryName = (typeof REM_CATEGORY_NAMES)[number];

/** The text holding the answer: what follows the last marker (its first non-empty line), or the whole response. */
function answerText(response: string): string {
  const after = textAfterLastMarker(response);
  if (after === null) return response;
  return meaningfulLines(after, /[*_`\s]/g)[0] ?? '';
}

export function categoryOf(target: string, meta?: Record<string, unknown>): RemCategoryName {
  const c = meta?.category;
  if (typeof c === 'string' && (REM_CATEGORY_NAMES as readonly string[]).includes(c)) return c as RemCategoryName;
  const t = target.trim().toLowerCase();
  if (/^\d+$/.test(t)) return 'counting';
  if (t === 'left' || t === 'right') return 'left-right';
  if (t === 'before' || t === 'after' || t === 'same time') return 'temporal';
  return 'comparison';
}

function words(text: string): string[] {
  return text.toLowerCase().match(/[a-z]+/g) ?? [];
}
const stem = (w: string) => w.replace(/s$/, '');

/** The comparison option named by the answer, or null when none or several are. */
function parseComparison(text: string, options: readonly string[]): string | null {
  const said = new Set(words(text).map(stem));
  const entities = options.filter((o) => o !== 'equal');
  const hits = options.filter((option) => {
    if (option === 'equal') return said.has('equal') || said.has('same');
    const others = new Set(entities.filter((e) => e !== option).flatMap((e) => words(e).map(stem)));
    const distinct = words(option)
      .map(stem)
      .filter((w) => !others.has(w));
    return distinct.length > 0 && distinct.every((w) => said.has(w));
  });
  return hits.length === 1 ? hits[0] : null;
}

/** The predicted answer in canonical form, or null when it cannot be read unambiguously. */
export function parseRemAnswer(
  response: string,
  category: RemCategoryName,
  options?: readonly string[],
): string | null {
  const text = answerText(response);
  switch (category) {
    case 'counting': {
      const m = /(?<![\d.])\d+(?![\d.]*\d)/.exec(text.replace(/\\boxed\{|\}/g, ' '));
      return m ? String(Number(m[0])) : null;
    }
    case 'left-right': {
      const w = new Set(words(text));
      return w.has('left') === w.has('right') ? null : w.has('left') ? 'left' : 'right';
    }
    case 'temporal': {
      const lower = text.toLowerCase();
      const found = ['before', 'after', 'same time'].filter((k) =>
        new RegExp(`\\b${k.replace(' ', '[\\s-]+')}\\b`).test(lower),
      );
      return found.length === 1 ? found[0] : null;
    }
    case 'comparison':
      return parseComparison(text, options ?? []);
  }
}

export function scoreRem(input: ScoreInput): Score {
  const category = categoryOf(input.target, input.meta);
  const target = input.target.trim().toLowerCase();
  const metaOptions = input.meta?.options;
  const options = Array.isArray(metaOptions)
    ? (metaOptions as string[])
    : [target, ...(target === 'equal' ? [] : ['equal'])];
  const prediction = parseRemAnswer(input.response, category, options);
  const exact = prediction !== null && prediction === target;
  const groundTruth = category === 'counting' ? Number(target) : null;
  return {
    reward: exact ? 1 : 0,
    valid: prediction !== null,
    prediction,
    metrics: {
      exact,
      groundTruth,
      countingAtLeast2: groundTruth === null ? null : groundTruth >= 2,
      countError: groundTruth !== null && prediction !== null ? Number(prediction) - groundTruth : null,
    },
  };
}
