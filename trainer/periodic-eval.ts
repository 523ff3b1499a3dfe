// The periodic evaluation of a training run: greedy completions on the fixed test split, scored by
// the environment and summarised by core/summary.ts as accuracy (mean reward, the paper's measure) with its 95%
// interval, exact-match and valid rates. Done once for the trained modality and once for the transfer modality (the same episodes with
// every action shown the other way).
import type { Env } from '../envs/env.ts';
import type { Episode, Modality } from '../core/episode.ts';
import type { ScoredRow } from '../core/score.ts';
import type { EncodedPrompt } from '../models/types.ts';
import type { Sampler } from '../models/sampler.ts';
import { Rng } from '../core/rng.ts';
import { summarizeScores } from '../core/summary.ts';
import { gameStartResponse } from '../envs/baseline.ts';
import { chunks } from './chunks.ts';

export interface PreparedEpisode {
  episode: Episode;
  prompt: EncodedPrompt;
}

export interface SplitEvaluation {
  modality: Modality;
  n: number;
  accuracy: number;
  low: number | null;
  high: number | null;
  exactRate: number;
  validRate: number;
  seconds: number;
  /** Generated tokens, for throughput. */
  tokens: number;
  /** The greedy completions, in the order of the items (for diagnostics such as trace-line counts). */
  completions: string[];
}

/** Room for the longest reference completion with a quarter to spare, plus a few tokens (the fitted default budget). */
export function completionBudget(referenceLengths: number[]): number {
  return Math.ceil(Math.max(0, ...referenceLengths) * 1.25) + 8;
}

/** Prompts decoded together: the built-in model batches them, and on CPU a decoding step costs little more for 64 rows than for 16. */
const EVAL_BATCH = 64;

/** Items answered so far, after each decoding batch (for progress, and a point where a caller may yield). */
export interface SplitProgress {
  done: number;
  total: number;
}

export function evaluateSplit(
  sampler: Sampler,
  env: Env,
  items: PreparedEpisode[],
  modality: Modality,
  maxNewTokens: number,
  responseOf: (completionText: string) => string = (t) => t,
): SplitEvaluation {
  const steps = evaluateSplitStepwise(sampler, env, items, modality, maxNewTokens, responseOf);
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/**
 * evaluateSplit one decoding batch at a time: yields the progress after each batch and returns the evaluation, so that
 * the training loop can show progress and let signals through (Ctrl-C) during a long evaluation.
 */
export function* evaluateSplitStepwise(
  sampler: Sampler,
  env: Env,
  items: PreparedEpisode[],
  modality: Modality,
  maxNewTokens: number,
  responseOf: (completionText: string) => string = (t) => t,
): Generator<SplitProgress, SplitEvaluation> {
  const start = performance.now();
  const rng = new Rng(0, 'greedy'); // unused by greedy decoding, but the contract asks for one
  const rows: ScoredRow[] = [];
  const completions: string[] = [];
  let tokens = 0;
  for (const chunk of chunks(items, EVAL_BATCH)) {
    const groups = sampler.sampleGroups(
      chunk.map((c) => c.prompt),
      1,
      { temperature: 0, topP: 1, maxNewTokens },
      rng,
    );
    chunk.forEach(({ episode }, i) => {
      const completion = groups[i][0];
      const input = {
        target: episode.target,
        response: responseOf(completion.text),
        initialState: episode.initialState,
        meta: episode.meta,
      };
      rows.push({ input, score: env.score(input) });
      completions.push(completion.text);
      tokens += completion.tokens.length;
    });
    yield { done: rows.length, total: items.length };
  }
  const summary = summarizeScores(env, rows);
  const n = rows.length;
  return {
    modality,
    n,
    accuracy: summary.accuracy ?? 0,
    low: summary.ci95?.low ?? null,
    high: summary.ci95?.high ?? null,
    exactRate: summary.exactMatch ?? 0,
    validRate: n > 0 ? (n - summary.invalid) / n : 0,
    seconds: (performance.now() - start) / 1000,
    tokens,
    completions,
  };
}

/** The Game Start baseline on test episodes: every answer is the initial state (or the domain's game-start answer). */
export function gameStartBaseline(
  env: Env,
  episodes: Episode[],
): { n: number; accuracy: number; low: number | null; high: number | null } {
  const rng = new Rng(0, 'game-start');
  const rows: ScoredRow[] = episodes.map((episode) => {
    const input = {
      target: episode.target,
      response: gameStartResponse(env, episode, rng),
      initialState: episode.initialState,
      meta: episode.meta,
    };
    return { input, score: env.score(input) };
  });
  const summary = summarizeScores(env, rows);
  return {
    n: rows.length,
    accuracy: summary.accuracy ?? 0,
    low: summary.ci95?.low ?? null,
    high: summary.ci95?.high ?? null,
  };
}
