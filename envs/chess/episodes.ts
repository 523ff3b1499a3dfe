// Chess episode candidates for the shared generator (envs/generate.ts): an initial position (full FEN), T moves in
// UCI and the full FEN after them. From a games file, games are drawn in a seeded order without replacement, one
// episode per game, games too short for the requested window skipped; the iterator ends when the file runs out.
// Without a file, synthetic games are played on the fly (envs/chess/synthetic.ts). Episodes repeating an earlier
// (initial state, moves) pair are skipped, so a dataset never holds the same episode twice.
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import type { Rng } from '../../core/rng.ts';
import type { Candidate, SampleOptions } from '../env.ts';
import { Board } from './board.ts';
import { CHECKPOINT_PLIES, readGamesFile, type Game } from './games.ts';
import { playSyntheticMove, startBoard } from './synthetic.ts';
import { LENIENT_PARSING } from '../../rewards/chess.ts';

const OFFSETS = ['start', 'random'] as const;
type Offset = (typeof OFFSETS)[number];

/** Chess options in SampleOptions.extra (other commands' keys pass through untouched). */
const chessExtraSchema = z.looseObject({
  games: z.string().min(1).optional(),
  offset: z.enum(OFFSETS).default('start'),
  /** How answers are parsed: as the MET-Bench harness (default), or with the lenient extension (recorded in meta). */
  'chess-answer': z.enum(['reference', LENIENT_PARSING]).default('reference'),
});

/** With a random offset, synthetic episodes start after 0 to this many plies of play. */
const MAX_SYNTHETIC_OFFSET = 40;
/** Give up on the synthetic source after this many draws in a row that were duplicates or ended too early. */
const MAX_FRUITLESS_DRAWS = 2000;

/** Build a candidate from a game: the FEN after `offset` plies, the next `count` moves and the FEN after them. */
function gameWindow(game: Game, offset: number, count: number): Candidate {
  const checkpoint = Math.min(Math.floor(offset / CHECKPOINT_PLIES), game.checkpoints.length - 1);
  // The moves were validated by chess.js when the file was read; the fast board (which agrees with chess.js, see
  // tests/envs/chess-board.test.ts) replays them.
  const board = Board.fromFen(game.checkpoints[checkpoint]);
  for (let i = checkpoint * CHECKPOINT_PLIES; i < offset; i++) board.playUci(game.moves[i]);
  const initialState = board.fen();
  const actionTexts = game.moves.slice(offset, offset + count);
  for (const move of actionTexts) board.playUci(move);
  return { initialState, actionTexts, target: board.fen() };
}

function* fromFile(games: Game[], rng: Rng, count: number, offset: Offset): Generator<Candidate> {
  for (const index of rng.shuffle(games.map((_, i) => i))) {
    const game = games[index];
    if (game.moves.length < count) continue;
    const ply = offset === 'start' ? 0 : rng.int(game.moves.length - count + 1);
    const window = gameWindow(game, ply, count);
    yield { ...window, meta: { source: 'file', game: index + 1, ply } };
  }
}

/** Synthetic episodes; yields null for a game that ended (mate or stalemate) before the window was complete. */
function* synthetic(rng: Rng, count: number, offset: Offset): Generator<Candidate | null> {
  for (let game = 1; ; game++) {
    const ply = offset === 'start' ? 0 : rng.int(MAX_SYNTHETIC_OFFSET + 1);
    const board = startBoard();
    let ended = false;
    for (let i = 0; i < ply && !ended; i++) ended = playSyntheticMove(board, rng, i) === null;
    const initialState = board.fen();
    const actionTexts: string[] = [];
    for (let i = 0; i < count && !ended; i++) {
      const move = playSyntheticMove(board, rng, ply + i);
      if (move === null) ended = true;
      else actionTexts.push(move);
    }
    yield ended ? null : { initialState, actionTexts, target: board.fen(), meta: { source: 'synthetic', game, ply } };
  }
}

/** The candidate stream of the chess environment. Validates options (and reads the games file) before returning. */
export function chessCandidates(rng: Rng, options: SampleOptions): Iterable<Candidate> {
  const count = options.actions;
  if (!Number.isInteger(count) || count < 0)
    throw new UserError(`--actions must be a non-negative integer, got ${count}`);
  const extra = parseOrFail(chessExtraSchema, options.extra, '--');
  const source =
    extra.games !== undefined
      ? fromFile(readGamesFile(extra.games), rng, count, extra.offset)
      : synthetic(rng, count, extra.offset);
  if (extra['chess-answer'] === 'reference') return unique(source);
  // The scoring option travels with each episode (into evaluation rows too, so `metrl score` honours it).
  return withMeta(unique(source), { answerParsing: LENIENT_PARSING });
}

function* withMeta(source: Iterable<Candidate>, meta: Record<string, unknown>): Generator<Candidate> {
  for (const candidate of source) yield { ...candidate, meta: { ...candidate.meta, ...meta } };
}

/** Drop repeated (initial state, moves) pairs and games that ended early (null); end after too many in a row. */
function* unique(source: Iterable<Candidate | null>): Generator<Candidate> {
  const seen = new Set<string>();
  let fruitless = 0;
  for (const candidate of source) {
    const key = candidate ? `${candidate.initialState}|${candidate.actionTexts.join(' ')}` : null;
    if (key === null || seen.has(key)) {
      if (++fruitless > MAX_FRUITLESS_DRAWS) return;
      continue;
    }
    fruitless = 0;
    seen.add(key);
    yield candidate as Candidate;
  }
}
