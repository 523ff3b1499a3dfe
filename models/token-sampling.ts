// Drawing one token from a row of logits: greedy at temperature 0, else softmax(logits / temperature) restricted to
// the nucleus (top-p) and drawn with the caller's seeded Rng. Shared by every architecture's generation (models/ layer);
// the returned log-probability is at temperature 1, as tokenLogProbs computes it, so rollouts and the learner agree.
import type { Rng } from '../core/rng.ts';
import type { SamplingOptions } from './types.ts';

/**
 * Draw one token from a logits row; returns it with its log-probability at temperature 1 (over the whole vocabulary,
 * as tokenLogProbs computes it). Tokens in `banned` (the built-in model's PAD, BOS, IMG and UNK: never a valid output) are not drawn.
 */
export function sampleToken(row: Float32Array, options: SamplingOptions, rng: Rng, banned: ReadonlySet<number> = new Set()): { token: number; logProb: number } {
  const n = row.length;
  let max = -Infinity;
  let argmax = 0;
  for (let i = 0; i < n; i++) if (row[i] > max) max = row[i];
  let best = -Infinity;
  for (let i = 0; i < n; i++) if (!banned.has(i) && row[i] > best) { best = row[i]; argmax = i; }
  let z = 0;
  for (let i = 0; i < n; i++) z += Math.exp(row[i] - max);
  const logZ = max + Math.log(z);
  if (options.temperature <= 0) return { token: argmax, logProb: row[argmax] - logZ };
  const probs = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) total += probs[i] = banned.has(i) ? 0 : Math.exp((row[i] - max) / options.temperature);
  let order: number[] = [];
  for (let i = 0; i < n; i++) order.push(i);
  if (options.topP < 1) {
    order.sort((a, b) => probs[b] - probs[a]);
    let cumulative = 0;
    let keep = 0;
    while (keep < n && cumulative < options.topP * total) cumulative += probs[order[keep++]];
    order = order.slice(0, Math.max(1, keep));
    total = cumulative;
  }
  let x = rng.next() * total;
  let token = order[order.length - 1];
  for (const i of order) {
    x -= probs[i];
    if (x < 0) { token = i; break; }
  }
  return { token, logProb: row[token] - logZ };
}
