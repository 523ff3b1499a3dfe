// Drawing one token from a row of logits: greedy at temperature 0, else softmax(logits / temperature) restricted to
// the k most probable tokens (top-k), then to those at least min-p times the most probable one's probability (min-p),
// then to the nucleus of what is left (top-p), and drawn with the caller's seeded Rng. Shared by every architecture's generation.
// Two log-probabilities come back: at temperature 1 (what `metrl serve` returns as raw_logprobs), and under the
// distribution the token was drawn from, put on the learner's support: softmax(logits / T) over the whole vocabulary,
// as tokenLogProbs computes it at the rollout temperature. The trainer compares the second with the learner's own
// (the sampling/sampling_logp_difference metrics): restricting the draw to the nucleus or away from banned tokens
// changes which tokens can come out, not the probability a token is recorded with, so the ratio of the two carries no
// factor of the kept mass.
import type { Rng } from '../core/rng.ts';
import type { SamplingOptions, TopLogProb } from './types.ts';

/** Banned sets as byte masks (a Set lookup per vocabulary entry per draw cost more than the arithmetic). */
const masks = new WeakMap<ReadonlySet<number>, Uint8Array>();
function maskOf(banned: ReadonlySet<number>, n: number): Uint8Array {
  let mask = masks.get(banned);
  if (!mask || mask.length < n) {
    mask = new Uint8Array(n);
    for (const t of banned) if (t >= 0 && t < n) mask[t] = 1;
    masks.set(banned, mask);
  }
  return mask;
}
/** The default banned set: one object, so its mask is built once (a fresh Set per draw built a fresh mask per draw). */
const NONE_BANNED: ReadonlySet<number> = new Set();
/** Scratch probabilities, reused across draws (drawing is synchronous). */
let scratch = new Float64Array(0);

/**
 * Draw one token from a logits row; returns it with its log-probability at temperature 1 and its samplingLogProb,
 * log softmax(logits / T) over the whole vocabulary (both as tokenLogProbs computes them). Tokens in `banned` (the built-in model's PAD, BOS, IMG and UNK: never a valid output) are not drawn.
 * The arithmetic (and so every draw for a seed) is the same in every path: sums run in vocabulary order.
 */
export function sampleToken(
  row: Float32Array,
  options: SamplingOptions,
  rng: Rng,
  banned: ReadonlySet<number> = NONE_BANNED,
): { token: number; logProb: number; samplingLogProb: number } {
  const n = row.length;
  const isBanned = maskOf(banned, n);
  let max = -Infinity;
  let argmax = 0;
  let best = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = row[i];
    if (v > max) max = v;
    if (!isBanned[i] && v > best) {
      best = v;
      argmax = i;
    }
  }
  const T = options.temperature;
  /** log Σ exp(row): the normaliser at temperature 1. */
  const logZAt1 = () => {
    let z = 0;
    for (let i = 0; i < n; i++) z += Math.exp(row[i] - max);
    return max + Math.log(z);
  };
  if (T <= 0) {
    const logZ = logZAt1();
    return { token: argmax, logProb: row[argmax] - logZ, samplingLogProb: row[argmax] - logZ };
  }
  if (scratch.length < n) scratch = new Float64Array(n);
  const probs = scratch;
  let total = 0;
  // The tempered normaliser over the whole vocabulary, banned tokens included (the learner's support).
  let all = 0;
  for (let i = 0; i < n; i++) {
    const e = Math.exp((row[i] - max) / T);
    all += e;
    total += probs[i] = isBanned[i] ? 0 : e;
  }
  // At T = 1 the tempered terms are the untempered ones (x / 1 is x), summed in the same order: one pass of exp, not two.
  const logZ = T === 1 ? max + Math.log(all) : logZAt1();
  const recorded = (token: number) => ({
    token,
    logProb: row[token] - logZ,
    samplingLogProb: (row[token] - max) / T - Math.log(all),
  });
  const topK = options.topK ?? 0;
  const minP = options.minP ?? 0;
  if (options.topP >= 1 && !(topK > 0) && !(minP > 0)) {
    // The whole vocabulary in index order (what the sorted path below does with order = 0 … n-1).
    let x = rng.next() * total;
    let token = n - 1;
    for (let i = 0; i < n; i++) {
      x -= probs[i];
      if (x < 0) {
        token = i;
        break;
      }
    }
    return recorded(token);
  }
  let order: number[] = [];
  for (let i = 0; i < n; i++) order.push(i);
  order.sort((a, b) => probs[b] - probs[a]);
  if (topK > 0 || minP > 0) {
    // Top-k, then min-p against the most probable token; the nucleus below is taken of what they keep.
    if (topK > 0) order = order.slice(0, topK);
    if (minP > 0) {
      const floor = minP * probs[order[0]];
      order = order.filter((i) => probs[i] >= floor);
    }
    total = order.reduce((s, i) => s + probs[i], 0);
  }
  let cumulative = 0;
  let keep = 0;
  while (keep < order.length && cumulative < options.topP * total) cumulative += probs[order[keep++]];
  order = order.slice(0, Math.max(1, keep));
  total = cumulative;
  let x = rng.next() * total;
  let token = order[order.length - 1];
  for (const i of order) {
    x -= probs[i];
    if (x < 0) {
      token = i;
      break;
    }
  }
  return recorded(token);
}

/**
 * log-softmax(row / T) at `target`, and with `withEntropy` the entropy of that distribution (else 0): a token's
 * log-prob as the samplers score a completion (max-subtracted, float64 sums). V: the entries of `row` that count.
 */
export function scoreToken(
  row: Float32Array,
  target: number,
  T: number,
  withEntropy: boolean,
  V = row.length,
): { logp: number; entropy: number } {
  let max = -Infinity;
  for (let v = 0; v < V; v++) max = Math.max(max, row[v] / T);
  let z = 0;
  for (let v = 0; v < V; v++) z += Math.exp(row[v] / T - max);
  const logZ = max + Math.log(z);
  let entropy = 0;
  if (withEntropy) {
    for (let v = 0; v < V; v++) {
      const lp = row[v] / T - logZ;
      entropy -= Math.exp(lp) * lp;
    }
  }
  return { logp: row[target] / T - logZ, entropy };
}

/**
 * The k most likely tokens of a logits row, best first (ties: lowest id), with their log-probabilities at temperature 1
 * over the whole vocabulary, as sampleToken's logProb. Tokens in `banned` are left out (they are never drawn).
 */
export function topLogProbs(row: Float32Array, k: number, banned: ReadonlySet<number> = new Set()): TopLogProb[] {
  const n = row.length;
  const isBanned = maskOf(banned, n);
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (row[i] > max) max = row[i];
  let z = 0;
  for (let i = 0; i < n; i++) z += Math.exp(row[i] - max);
  const logZ = max + Math.log(z);
  // An insertion into a sorted list of at most k: O(n · k) with k ≤ 20, no sort of the vocabulary.
  const best: number[] = [];
  for (let i = 0; i < n; i++) {
    if (isBanned[i]) continue;
    if (best.length === k && row[i] <= row[best[k - 1]]) continue;
    let at = best.length;
    while (at > 0 && row[best[at - 1]] < row[i]) at--;
    best.splice(at, 0, i);
    if (best.length > k) best.pop();
  }
  return best.map((token) => ({ token, logProb: row[token] - logZ }));
}
