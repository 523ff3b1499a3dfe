// The paper's baselines as model sources. `baseline:game-start` answers with the initial state (chess: the starting
// FEN of the episode, 74.9% per-square after 10 moves in Table 1; shell: the ball's starting shell).
// `baseline:random` answers with a random answer of the right form, seeded per item: shell a uniform shell (33.3% in
// Table 2); chess the initial position's pieces scattered over random squares; perception a random move or swap.
import { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import type { Domain, Episode } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import { ANSWER_CUE } from '../../models/builtin/template.ts';
import { getEnv } from '../../envs/registry.ts';
import type { ModelSource, Query, SourceReply } from '../types.ts';

export const BASELINES = ['game-start', 'random'] as const;
export type BaselineName = (typeof BASELINES)[number];
const SUPPORTED: readonly Domain[] = ['chess', 'shell'];

export function baselineSource(name: BaselineName, seed: number): ModelSource {
  return {
    label: `baseline:${name}`,
    async complete(query: Query): Promise<SourceReply> {
      const domain = query.episode.domain;
      const rng = new Rng(seed, 'baseline', name, query.episode.id, query.kind === 'perception' ? query.index : -1);
      if (!SUPPORTED.includes(domain)) {
        // Question-answering domains (boxes, mcst, …) may define their own baselines on the Env.
        const env = await getEnv(domain);
        if (!env.baselineAnswer || query.kind === 'perception') throw new UserError(`baseline:${name} is not defined for ${domain}`);
        return { text: `${ANSWER_CUE}${env.baselineAnswer(query.episode, name, rng)}`, usage: null };
      }
      const text = name === 'game-start' ? gameStartAnswer(query) : randomAnswer(query, rng);
      return { text, usage: null };
    },
  };
}

function gameStartAnswer(query: Query): string {
  if (query.kind === 'perception') {
    throw new UserError('baseline:game-start predicts a state; it has no answer to the perception task (use baseline:random)');
  }
  return gameStartResponse({}, query.episode);
}

/**
 * The Game Start answer to a tracking episode: the domain's own game-start answer when it defines one, else the
 * initial state (chess, shell). Also what training runs log as their baseline on the test split.
 */
export function gameStartResponse(env: Pick<Env, 'baselineAnswer'>, episode: Episode, rng: Rng = new Rng(0, 'game-start')): string {
  return `${ANSWER_CUE}${env.baselineAnswer ? env.baselineAnswer(episode, 'game-start', rng) : episode.initialState}`;
}

function randomAnswer(query: Query, rng: Rng): string {
  const domain = query.episode.domain;
  if (query.kind === 'perception') return domain === 'chess' ? randomMove(rng) : randomSwap(rng);
  return `FINAL ANSWER: ${domain === 'chess' ? scatteredFen(query.episode.initialState, rng) : String(rng.range(1, 3))}`;
}

const FILES = 'abcdefgh';

function randomMove(rng: Rng): string {
  const from = rng.int(64);
  let to = rng.int(63);
  if (to >= from) to++;
  const square = (i: number) => `${FILES[i % 8]}${Math.floor(i / 8) + 1}`;
  return `${square(from)}${square(to)}`;
}

function randomSwap(rng: Rng): string {
  const [a, b] = rng.sample([1, 2, 3], 2).sort();
  return `${a} swap ${b}`;
}

/** The pieces of the initial placement on random squares, as a FEN with the side to move drawn at random. */
export function scatteredFen(initialFen: string, rng: Rng): string {
  const placement = initialFen.trim().split(/\s+/)[0] ?? '';
  const pieces = [...placement].filter((c) => /[prnbqkPRNBQK]/.test(c));
  const board: (string | null)[] = Array(64).fill(null);
  const squares = rng.sample(Array.from({ length: 64 }, (_, i) => i), Math.min(pieces.length, 64));
  squares.forEach((sq, i) => (board[sq] = pieces[i]));
  const ranks: string[] = [];
  for (let r = 0; r < 8; r++) {
    let row = '';
    let empty = 0;
    for (let f = 0; f < 8; f++) {
      const piece = board[r * 8 + f];
      if (piece === null) empty++;
      else {
        if (empty > 0) row += String(empty);
        empty = 0;
        row += piece;
      }
    }
    if (empty > 0) row += String(empty);
    ranks.push(row);
  }
  return `${ranks.join('/')} ${rng.bool() ? 'w' : 'b'} - - 0 1`;
}
