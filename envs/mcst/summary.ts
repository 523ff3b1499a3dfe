// MCST breakdowns (paper Tables 4-6, 11, 18-22): accuracy by level, question type, domain, name region, negation
// (with / without negated actions), negation rate, grid size and sequence length, each with a Wilson 95% interval; negation blindness (the share of wrong answers
// that equal the negation-blind answer, where that differs from the target); and matched pairs — for scenarios seen
// both with and without their negated sentences, accuracy on each side over the same pairs.
import type { ScoredRow } from '../../core/score.ts';
import { accuracyBy, cell } from '../breakdown.ts';

const metaOf = (row: ScoredRow, key: string) => row.input.meta?.[key];
const keyOf = (key: string) => (row: ScoredRow) => {
  const v = metaOf(row, key);
  return typeof v === 'string' || typeof v === 'number' ? v : typeof v === 'boolean' ? String(v) : null;
};

/** Table 22's buckets of sequence length. */
const ACTION_BUCKETS: Array<[number, number]> = [
  [0, 5],
  [6, 8],
  [9, 12],
  [13, 17],
  [18, 25],
  [26, 40],
];
function actionBucket(n: unknown): string | null {
  if (typeof n !== 'number') return null;
  const bucket = ACTION_BUCKETS.find(([lo, hi]) => n >= lo && n <= hi);
  return bucket ? `${bucket[0]}-${bucket[1]}` : null;
}

export function summarizeMcst(rows: ScoredRow[]): Record<string, unknown> {
  const wrongWithBlind = rows.filter((r) => r.score.reward < 1 && typeof r.score.metrics.negationBlind === 'boolean');
  const blindErrors = wrongWithBlind.filter((r) => r.score.metrics.negationBlind === true).length;
  const pairs = new Map<string, { with?: ScoredRow; without?: ScoredRow }>();
  for (const row of rows) {
    const id = metaOf(row, 'pairId');
    const role = metaOf(row, 'pairRole');
    if (typeof id !== 'string' || (role !== 'with-negation' && role !== 'without-negation')) continue;
    const entry = pairs.get(id) ?? {};
    if (role === 'with-negation') entry.with = row;
    else entry.without = row;
    pairs.set(id, entry);
  }
  const complete = [...pairs.values()].filter((p) => p.with && p.without);
  const withNeg = cell(complete.map((p) => p.with!));
  const withoutNeg = cell(complete.map((p) => p.without!));
  return {
    overall: cell(rows),
    byLevel: accuracyBy(rows, keyOf('level')),
    byQuestionType: accuracyBy(rows, keyOf('questionType')),
    byDomain: accuracyBy(rows, keyOf('domain')),
    byNameRegion: accuracyBy(rows, keyOf('nameRegion')),
    byNegation: accuracyBy(rows, (r) => (metaOf(r, 'negation') === true ? 'with-negation' : 'without-negation')),
    // The paper's ablation axes (Tables 18, 20, 22).
    byNegationRate: accuracyBy(rows, keyOf('negationRate')),
    byGridSize: accuracyBy(rows, keyOf('gridSize')),
    byActions: accuracyBy(rows, (r) => actionBucket(metaOf(r, 'numActions'))),
    negationBlindness: {
      wrongAnswersWithBlindAlternative: wrongWithBlind.length,
      equalToBlindAnswer: blindErrors,
      share: wrongWithBlind.length ? blindErrors / wrongWithBlind.length : null,
    },
    matchedPairs: {
      pairs: complete.length,
      withNegation: withNeg,
      withoutNegation: withoutNeg,
      drop: complete.length ? withoutNeg.accuracy - withNeg.accuracy : null,
    },
  };
}
