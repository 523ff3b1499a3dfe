// The paper's chess baselines (Table 1), as Env.baselineAnswer and Env.randomPerceptionAnswer: 'game-start' answers
// with the episode's initial FEN (74.9% per-square after 10 moves); 'random' scatters the initial position's pieces
// over random squares, and reads a perception image as a random move.
import type { Rng } from '../../core/rng.ts';
import type { Episode } from '../../core/episode.ts';
import { placementOf } from '../../rewards/placement.ts';
import { squareName } from './uci.ts';

/** Env.baselineAnswer: the initial FEN ('game-start') or its pieces scattered ('random'). */
export function chessBaselineAnswer(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string {
  return baseline === 'game-start' ? episode.initialState : scatteredFen(episode.initialState, rng);
}

/** Env.randomPerceptionAnswer: a move between two distinct random squares, as UCI. */
export function randomChessMove(_episode: Episode, _index: number, rng: Rng): string {
  const from = rng.int(64);
  let to = rng.int(63);
  if (to >= from) to++;
  const square = (i: number) => squareName({ file: i % 8, rank: Math.floor(i / 8) });
  return `${square(from)}${square(to)}`;
}

/** The pieces of the initial placement on random squares, as a FEN with the side to move drawn at random. */
export function scatteredFen(initialFen: string, rng: Rng): string {
  const placement = initialFen.trim().split(/\s+/)[0] ?? '';
  const pieces = [...placement].filter((c) => /[prnbqkPRNBQK]/.test(c));
  const board: string[] = Array(64).fill('.');
  const squares = rng.sample(
    Array.from({ length: 64 }, (_, i) => i),
    Math.min(pieces.length, 64),
  );
  squares.forEach((sq, i) => (board[sq] = pieces[i]));
  return `${placementOf(board)} ${rng.bool() ? 'w' : 'b'} - - 0 1`;
}
