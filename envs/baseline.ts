// The paper's baselines, for every environment: each Env answers a tracking episode as 'game-start' (from the initial
// state alone) or 'random' (an answer of the right form) through Env.baselineAnswer, and some read a perception image
// at random (Env.randomPerceptionAnswer). This file turns those answers into responses, as the evaluator's baseline
// source (`metrl evaluate --model baseline:…`) and a training run's logged Game Start baseline both need them.
import { Rng } from '../core/rng.ts';
import type { Episode } from '../core/episode.ts';
import { finalAnswerResponse } from '../rewards/final-answer.ts';
import type { Env } from './env.ts';

export const BASELINES = ['game-start', 'random'] as const;
export type BaselineName = (typeof BASELINES)[number];

/**
 * The Game Start answer to a tracking episode as a response: the domain's game-start answer, or the initial state
 * when the environment defines none. What training runs log as their baseline on the test split.
 */
export function gameStartResponse(
  env: Pick<Env, 'baselineAnswer'>,
  episode: Episode,
  rng: Rng = new Rng(0, 'game-start'),
): string {
  return finalAnswerResponse(
    env.baselineAnswer ? env.baselineAnswer(episode, 'game-start', rng) : episode.initialState,
  );
}
