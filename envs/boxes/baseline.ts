// The paper's random baseline for the boxes task: output 0 to m = 3 objects drawn from the objects that appear in the
// same clauses as the queried box (its initial-state clause and every operation that names it). We compute its exact
// expected accuracy per question (for summaries) and can also sample its answers (to evaluate it like a model,
// `metrl evaluate --model baseline:random --domain boxes`; baseline:game-start repeats the initial contents).
// Decision: the number of objects k is uniform over 0..min(3, |clause objects|), then k distinct objects are drawn.
import type { Rng } from '../../core/rng.ts';
import type { Episode } from '../../core/episode.ts';

const MAX_OBJECTS = 3;

function binomial(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let result = 1;
  for (let i = 1; i <= k; i++) result = (result * (n - k + i)) / i;
  return result;
}

/** Probability that the baseline outputs exactly `answer` (object names) given the clause objects. */
export function randomBaselineAccuracy(answer: readonly string[], clauseObjects: readonly string[]): number {
  const pool = new Set(clauseObjects);
  if (!answer.every((a) => pool.has(a))) return 0;
  const kMax = Math.min(MAX_OBJECTS, pool.size);
  if (answer.length > kMax) return 0;
  return 1 / (kMax + 1) / binomial(pool.size, answer.length);
}

/** One baseline answer, in the canonical answer form ("the a and the b", or "nothing"). */
export function sampleRandomBaseline(rng: Rng, clauseObjects: readonly string[]): string {
  const pool = [...new Set(clauseObjects)];
  const k = rng.int(Math.min(MAX_OBJECTS, pool.length) + 1);
  const picked = rng.sample(pool, k).sort();
  return picked.length === 0 ? 'nothing' : picked.map((n) => `the ${n}`).join(' and ');
}

/** Env.baselineAnswer: 'game-start' repeats the box's initial contents; 'random' is the clause baseline above. */
export function boxesBaselineAnswer(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string {
  if (baseline === 'game-start') return String(episode.meta.initialContents ?? 'nothing');
  const clause = Array.isArray(episode.meta.clauseObjects) ? episode.meta.clauseObjects.map(String) : [];
  return sampleRandomBaseline(rng, clause);
}
