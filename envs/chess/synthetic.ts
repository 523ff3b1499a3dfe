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
// Measured over 40 games of 60 plies (seed 9): 18.5% of moves capture (real Millionbase games: 20.7%), 1.35 castlings
// per game, 10% of games end in mate before ply 60; material imbalance at ply 60 averages 4.5 pawns (real: 1.0),
// so the games are plausible-looking but sloppier than human play.
// A game that ends (mate, stalemate) before the plies an episode needs is discarded by the caller.
import { Chess, type Color, type PieceSymbol, type Square } from 'chess.js';
import type { Rng } from '../../core/rng.ts';

const VALUE: Record<PieceSymbol, number> = { p: 1, n: 3, b: 3, r: 5, q: 9, k: 0 };
const CENTER = new Set(['d4', 'e4', 'd5', 'e5']);
const WIDE_CENTER = /^[c-f][3-6]$/;
const FLANK_PAWN_PENALTY: Record<string, number> = { a: 0.8, b: 0.6, f: 0.6, g: 0.8, h: 0.8 };
/** How sharply the draw prefers higher scores: probability ∝ exp(SHARPNESS × score). */
const SHARPNESS = 1.6;
/** Score per pawn of material won or lost. */
const MATERIAL_WEIGHT = 1;
const SAN_DEST = /([a-h][1-8])(=[QRBN])?[+#]?$/;

/** A legal move as the chooser sees it: its SAN (for check and capture marks) and its squares. */
export interface CandidateMove {
  san: string;
  from: Square;
  to: Square;
  promotion?: PieceSymbol;
}

/** What a piece standing on `square` stands to lose to the opponent's cheapest attacker (0 when safe). */
function exposure(chess: Chess, square: Square, value: number, us: Color, ignore: Square | null): number {
  const them: Color = us === 'w' ? 'b' : 'w';
  if (!chess.isAttacked(square, them)) return 0;
  const cheapest = Math.min(...chess.attackers(square, them).map((s) => VALUE[chess.get(s)?.type ?? 'q']));
  const defended = chess.attackers(square, us).some((s) => s !== ignore);
  return defended ? Math.max(0, value - cheapest) : value;
}

/** Heuristic score of one legal move in the current position (see the header for the terms). */
export function scoreMove(chess: Chess, move: CandidateMove, ply: number): number {
  const { san, from, to: dest } = move;
  const us: Color = chess.turn();
  if (san.startsWith('O-O')) return 2.5 + (san.endsWith('+') ? 1.5 : 0);
  let score = 0;
  if (san.endsWith('#')) score += 20;
  else if (san.endsWith('+')) score += 1.5;
  const piece = chess.get(from)?.type ?? 'p';
  const isCapture = san.includes('x');
  const captured = isCapture ? (chess.get(dest)?.type ?? 'p') : undefined; // an empty destination is en passant
  const movedValue = move.promotion ? VALUE[move.promotion] : VALUE[piece];
  // Material: what we take, what we leave en prise on the destination, and what we rescue by leaving `from`.
  let gain = captured ? VALUE[captured] : 0;
  if (piece !== 'k') {
    gain -= exposure(chess, dest, movedValue, us, from);
    gain += exposure(chess, from, VALUE[piece], us, null);
  }
  score += MATERIAL_WEIGHT * gain;
  if (move.promotion) score += move.promotion === 'q' ? 4 : move.promotion === 'n' ? 0.7 : 0.3;
  const home = us === 'w' ? '1' : '8';
  if (ply < 20 && (piece === 'n' || piece === 'b') && from[1] === home) score += 1; // developing
  if (piece === 'n' && (dest[0] === 'a' || dest[0] === 'h')) score -= 1; // knights on the rim
  if ((piece === 'n' || piece === 'b') && dest[1] === home) score -= 1.5; // undeveloping
  if (ply < 20 && piece === 'p' && !isCapture) score -= FLANK_PAWN_PENALTY[dest[0]] ?? 0;
  if (ply < 12 && piece === 'q') score -= 1;
  if (ply < 16 && piece === 'r') score -= 0.5;
  if (piece === 'k' && ply < 40) score -= 1.5;
  if (CENTER.has(dest)) score += 1;
  else if (WIDE_CENTER.test(dest)) score += 0.4;
  return score;
}

/** All legal moves of the side to move, with their from and to squares (castling as the king's move). */
export function candidateMoves(chess: Chess): CandidateMove[] {
  const us = chess.turn();
  const out: CandidateMove[] = [];
  for (const row of chess.board()) {
    for (const cell of row) {
      if (!cell || cell.color !== us) continue;
      for (const san of chess.moves({ square: cell.square })) {
        const to = san.startsWith('O-O')
          ? (((san.startsWith('O-O-O') ? 'c' : 'g') + cell.square[1]) as Square)
          : ((SAN_DEST.exec(san)?.[1] ?? cell.square) as Square);
        const promotion = /=([QRBN])/.exec(san)?.[1].toLowerCase() as PieceSymbol | undefined;
        out.push({ san, from: cell.square, to, ...(promotion ? { promotion } : {}) });
      }
    }
  }
  return out;
}

/** Tries per ply before a move that allows mate or loses material to a reply is accepted anyway. */
const MAX_TRIES = 4;

/** The most material the side to move can win with one capture (a one-step exchange estimate from its SAN list). */
function bestCapture(chess: Chess, replies: string[]): number {
  const defender: Color = chess.turn() === 'w' ? 'b' : 'w';
  let best = 0;
  for (const san of replies) {
    if (!san.includes('x')) continue;
    const dest = SAN_DEST.exec(san)?.[1] as Square | undefined;
    if (!dest) continue;
    const victim = VALUE[chess.get(dest)?.type ?? 'p'];
    const attacker = /^[KQRBN]/.test(san) ? VALUE[san[0].toLowerCase() as PieceSymbol] : 1;
    const gain = chess.isAttacked(dest, defender) ? Math.max(0, victim - attacker) : victim;
    if (gain > best) best = gain;
  }
  return best;
}

/**
 * Play the next move for the side to move and return it in UCI, or null when the game is over. A drawn move is tried
 * on the board: if the reply can mate, or can win clearly more material than the move itself took, it is taken back
 * and another move is drawn (a cheap one-reply look-ahead that keeps games from ending in early blunders).
 */
export function playSyntheticMove(chess: Chess, rng: Rng, ply: number): string | null {
  const moves = candidateMoves(chess);
  if (moves.length === 0) return null;
  const scores = moves.map((m) => scoreMove(chess, m, ply));
  const best = Math.max(...scores);
  const weights = scores.map((s) => Math.exp(SHARPNESS * (s - best)));
  for (let attempt = 1; ; attempt++) {
    const index = rng.weighted(weights);
    const choice = moves[index];
    const taken = choice.san.includes('x') ? VALUE[chess.get(choice.to)?.type ?? 'p'] : 0;
    const move = chess.move({ from: choice.from, to: choice.to, promotion: choice.promotion });
    weights[index] = 0;
    if (attempt === MAX_TRIES || weights.every((w) => w === 0)) return move.from + move.to + (move.promotion ?? '');
    const replies = chess.moves();
    if (!replies.some((r) => r.endsWith('#')) && bestCapture(chess, replies) <= taken + 1.5) {
      return move.from + move.to + (move.promotion ?? '');
    }
    chess.undo();
  }
}
