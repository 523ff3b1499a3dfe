// The built-in source of chess games when no games file is given: seeded, synthetic games that look plausible.
// They are NOT real games (the paper uses Millionbase); they exist so that metrl works out of the box and so that
// training has an unlimited supply of fresh positions. Pass --games FILE to use real games.
//
// How a move is picked: every legal move gets a score from cheap, local heuristics, and one is drawn with probability
// ∝ exp(1.6 × score), so play is varied but sensible:
//   + material (one pawn = 1): what a capture takes, minus what the moved piece leaves en prise on its destination,
//     plus what it rescues by leaving an attacked square (one-step exchange estimate: attacked and undefended loses the
//     piece; defended but attacked by a cheaper piece loses the difference);
//   + checks (+1.5), checkmate (+20), castling (+2.5), promotions (queen +4; knight, rook, bishop small, so
//     under-promotions still occur now and then);
//   + developing knights and bishops early, central destinations (d4 e4 d5 e5, then the c3-f6 box);
//   - early queen, rook and king walks, knights on the rim, minor pieces returning home, early flank pawn moves.
// The drawn move is then tried on the board against the replies: if the opponent could mate at once or win clearly
// more material than the move took, it is taken back and another is drawn (up to 4 tries). No deeper search.
// Measured over 200 games of 60 plies (seeds 9 and 10): 18.7% of moves capture (the 40 real Millionbase games of
// ../shared/data: 20.7%), about 1.4 castlings per game, 7% of games end in mate before ply 60, and the material
// imbalance at ply 60 averages 4.0-4.4 pawns (real games: 1.0): plausible-looking games, sloppier than human play.
// Play runs on the fast board of envs/chess/board.ts (checked against chess.js by the tests).
// A game that ends (mate, stalemate) before the plies an episode needs is discarded by the caller.
import type { Rng } from '../../core/rng.ts';
import {
  BISHOP,
  Board,
  FLAG_CAPTURE,
  FLAG_CASTLE,
  KING,
  KNIGHT,
  moveToUci,
  PAWN,
  QUEEN,
  ROOK,
  WHITE,
  type BoardMove,
  type Side,
} from './board.ts';

/** Material value by piece type (index PAWN … KING). */
const VALUE = [0, 1, 3, 3, 5, 9, 0];
const FLANK_PAWN_PENALTY = [0.8, 0.6, 0, 0, 0, 0.6, 0.8, 0.8]; // by file a … h
/** How sharply the draw prefers higher scores: probability ∝ exp(SHARPNESS × score). */
const SHARPNESS = 1.6;
/** Score per pawn of material won or lost. */
const MATERIAL_WEIGHT = 1;
/** Tries per ply before a move that allows mate or loses material to a reply is accepted anyway. */
const MAX_TRIES = 4;

const fileOf = (sq: number) => sq & 7;
const rankOf = (sq: number) => sq >> 4;

/** What a piece of `value` standing on `sq` stands to lose to the opponent's cheapest attacker (0 when safe). */
function exposure(board: Board, sq: number, value: number, us: Side, ignore: number): number {
  const them = (us ^ 8) as Side;
  if (!board.isAttacked(sq, them)) return 0;
  const attackers = board.attackers(sq, them);
  const cheapest = Math.min(...attackers.map((a) => VALUE[board.pieceAt(a) & 7]));
  const defended = board.attackers(sq, us).some((d) => d !== ignore);
  return defended ? Math.max(0, value - cheapest) : value;
}

/** Does the move give check, and is it mate? (Made and taken back on the board.) */
function checkStatus(board: Board, move: BoardMove): 'none' | 'check' | 'mate' {
  board.make(move);
  let status: 'none' | 'check' | 'mate' = 'none';
  if (board.inCheck()) status = board.legalMoves().length === 0 ? 'mate' : 'check';
  board.unmake();
  return status;
}

/** Heuristic score of one legal move in the current position (see the header for the terms). */
function scoreMove(board: Board, move: BoardMove, ply: number): number {
  const us = board.turn;
  const check = checkStatus(board, move);
  const checkBonus = check === 'mate' ? 20 : check === 'check' ? 1.5 : 0;
  if (move.flags & FLAG_CASTLE) return 2.5 + checkBonus;
  let score = checkBonus;
  const type = move.piece & 7;
  const movedValue = move.promotion ? VALUE[move.promotion] : VALUE[type];
  // Material: what we take, what we leave en prise on the destination, and what we rescue by leaving `from`.
  let gain = move.flags & FLAG_CAPTURE ? VALUE[move.captured] : 0;
  if (type !== KING) {
    gain -= exposure(board, move.to, movedValue, us, move.from);
    gain += exposure(board, move.from, VALUE[type], us, -1);
  }
  score += MATERIAL_WEIGHT * gain;
  if (move.promotion) score += move.promotion === QUEEN ? 4 : move.promotion === KNIGHT ? 0.7 : 0.3;
  const home = us === WHITE ? 0 : 7;
  const minor = type === KNIGHT || type === BISHOP;
  if (ply < 20 && minor && rankOf(move.from) === home) score += 1; // developing
  if (type === KNIGHT && (fileOf(move.to) === 0 || fileOf(move.to) === 7)) score -= 1; // knights on the rim
  if (minor && rankOf(move.to) === home) score -= 1.5; // undeveloping
  if (ply < 20 && type === PAWN && !(move.flags & FLAG_CAPTURE)) score -= FLANK_PAWN_PENALTY[fileOf(move.to)];
  if (ply < 12 && type === QUEEN) score -= 1;
  if (ply < 16 && type === ROOK) score -= 0.5;
  if (type === KING && ply < 40) score -= 1.5;
  const file = fileOf(move.to);
  const rank = rankOf(move.to);
  if ((file === 3 || file === 4) && (rank === 3 || rank === 4))
    score += 1; // d4 e4 d5 e5
  else if (file >= 2 && file <= 5 && rank >= 2 && rank <= 5) score += 0.4; // the c3-f6 box
  return score;
}

/** Does the side to move have a mate in one? */
function hasMateInOne(board: Board, moves: BoardMove[]): boolean {
  for (const move of moves) {
    board.make(move);
    const mate = board.inCheck() && board.legalMoves().length === 0;
    board.unmake();
    if (mate) return true;
  }
  return false;
}

/** The most material the side to move can win with one capture (one-step exchange estimate). */
function bestCapture(board: Board, moves: BoardMove[]): number {
  const defender = (board.turn ^ 8) as Side;
  let best = 0;
  for (const move of moves) {
    if (!(move.flags & FLAG_CAPTURE)) continue;
    const victim = VALUE[move.captured];
    const gain = board.isAttacked(move.to, defender) ? Math.max(0, victim - VALUE[move.piece & 7]) : victim;
    if (gain > best) best = gain;
  }
  return best;
}

/**
 * Play the next move for the side to move and return it in UCI, or null when the game is over. A drawn move is tried
 * on the board: if the reply can mate, or can win clearly more material than the move itself took, it is taken back
 * and another move is drawn (a cheap one-reply look-ahead that keeps games from ending in early blunders).
 */
export function playSyntheticMove(board: Board, rng: Rng, ply: number): string | null {
  const moves = board.legalMoves();
  if (moves.length === 0) return null;
  const scores = moves.map((m) => scoreMove(board, m, ply));
  const best = Math.max(...scores);
  const weights = scores.map((s) => Math.exp(SHARPNESS * (s - best)));
  for (let attempt = 1; ; attempt++) {
    const index = rng.weighted(weights);
    const move = moves[index];
    const taken = move.flags & FLAG_CAPTURE ? VALUE[move.captured] : 0;
    board.make(move);
    weights[index] = 0;
    if (attempt === MAX_TRIES || weights.every((w) => w === 0)) return moveToUci(move);
    const replies = board.legalMoves();
    if (!hasMateInOne(board, replies) && bestCapture(board, replies) <= taken + 1.5) return moveToUci(move);
    board.unmake();
  }
}

/** A board at the standard starting position, for synthetic games. */
export function startBoard(): Board {
  return Board.fromFen('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1');
}
