// REM reward: the paper's keyword verification, applied to the answer after the last "FINAL ANSWER:" marker (or to
// the whole response when there is none): counting takes the first whole number; left/right needs exactly one of
// "left"/"right"; temporal exactly one of "before"/"after"/"same time"; comparison exactly one of the two entities
// (recognised by the words that tell them apart, plurals or not) or "equal". Binary reward. Summaries give accuracy
// per category, the overall score as their unweighted mean, and counting on ground truth ≥ 2. Pure.
import { meaningfulLines, textAfterLastMarker } from './final-answer.ts';
import type { Score, ScoreInput, ScoredRow } from '../core/score.ts';

export const REM_CATEGORY_NAMES = ['counting', 'comparison', 'left-right', 'temporal'] as const;
export type RemCategoryName = (typeof REM_CATEGORY_NAMES)[number];


/** The text holding the answer: what follows the last marker (its first non-empty line), or the whole response. */
export function answerText(response: string): string {
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
    const distinct = words(option).map(stem).filter((w) => !others.has(w));
    return distinct.length > 0 && distinct.every((w) => said.has(w));
  });
  return hits.length === 1 ? hits[0] : null;
}

/** The predicted answer in canonical form, or null when it cannot be read unambiguously. */
export function parseRemAnswer(response: string, category: RemCategoryName, options?: readonly string[]): string | null {
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
      const found = ['before', 'after', 'same time'].filter((k) => new RegExp(`\\b${k.replace(' ', '[\\s-]+')}\\b`).test(lower));
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
  const options = Array.isArray(metaOptions) ? (metaOptions as string[]) : [target, ...(target === 'equal' ? [] : ['equal'])];
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

interface Tally {
  count: number;
  correct: number;
}

function add(map: Map<string, Tally>, key: string, reward: number): void {
  const t = map.get(key) ?? { count: 0, correct: 0 };
  t.count++;
  t.correct += reward;
  map.set(key, t);
}

function table(map: Map<string, Tally>): Record<string, { count: number; accuracy: number }> {
  const keys = [...map.keys()].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  return Object.fromEntries(keys.map((k) => [k, { count: map.get(k)!.count, accuracy: map.get(k)!.correct / map.get(k)!.count }]));
}

/** Bins of the number of objects seen in a trajectory, as the paper's scaling plots group them. */
function seenBin(n: number): string {
  for (const [hi, label] of [[8, '0-8'], [16, '9-16'], [24, '17-24'], [36, '25-36']] as const) if (n <= hi) return label;
  return '37+';
}

/**
 * Accuracy per category and overall (their unweighted mean, over the categories present), counting on ground truth
 * ≥ 2, counting's under/over-count shares, and accuracy by variant, trajectory length, objects seen and duplicates
 * (the paper's Figure 4 axes), and comparison accuracy by the difference of the two counts (its Figure 5).
 */
export function summarizeRem(rows: ScoredRow[]): Record<string, unknown> {
  const byCategory = new Map<string, Tally>();
  const byVariant = new Map<string, Tally>();
  const byLength = new Map<string, Tally>();
  const countingAtLeast2 = new Map<string, Tally>();
  const bySeen = new Map<string, Tally>();
  const byDuplicates = new Map<string, Tally>();
  const comparisonByDifference = new Map<string, Tally>();
  let under = 0;
  let over = 0;
  let counted = 0;
  for (const row of rows) {
    const category = categoryOf(row.input.target, row.input.meta);
    const r = row.score.reward;
    add(byCategory, category, r);
    const meta = row.input.meta ?? {};
    if (typeof meta.variant === 'string') add(byVariant, meta.variant, r);
    if (typeof meta.frames === 'number') add(byLength, String(meta.frames), r);
    if (typeof meta.objectsSeen === 'number') add(bySeen, seenBin(meta.objectsSeen), r);
    if (typeof meta.duplicates === 'number') add(byDuplicates, String(meta.duplicates), r);
    const counts = meta.counts;
    if (category === 'comparison' && Array.isArray(counts) && counts.length === 2) {
      add(comparisonByDifference, String(Math.abs(Number(counts[0]) - Number(counts[1]))), r);
    }
    if (category === 'counting') {
      if (Number(row.input.target) >= 2) add(countingAtLeast2, 'all', r);
      const err = row.score.metrics.countError;
      if (typeof err === 'number') {
        counted++;
        if (err < 0) under++;
        if (err > 0) over++;
      }
    }
  }
  const categories = table(byCategory);
  const accuracies = Object.values(categories).map((c) => c.accuracy);
  const at2 = countingAtLeast2.get('all');
  return {
    overall: accuracies.length > 0 ? accuracies.reduce((s, a) => s + a, 0) / accuracies.length : null,
    byCategory: categories,
    countingGroundTruthAtLeast2: at2 ? { count: at2.count, accuracy: at2.correct / at2.count } : null,
    countingUndercountRate: counted > 0 ? under / counted : null,
    countingOvercountRate: counted > 0 ? over / counted : null,
    ...(byVariant.size > 0 ? { byVariant: table(byVariant) } : {}),
    ...(byLength.size > 0 ? { byTrajectoryLength: table(byLength) } : {}),
    ...(bySeen.size > 0 ? { byObjectsSeen: table(bySeen) } : {}),
    ...(byDuplicates.size > 0 ? { byDuplicates: table(byDuplicates) } : {}),
    ...(comparisonByDifference.size > 0 ? { comparisonByCountDifference: table(comparisonByDifference) } : {}),
  };
}
