// The built-in source of chess games when no games file is given: seeded, synthetic games that look plausible.
// They are NOT real games (the paper uses Millionbase); they exist so that metrl works out of the box and so that
// training has an unlimited supply of fresh positions. Pass --games FILE to use real games.
//
// How a move is picked: every legal move gets a score from cheap, local heuristics and one is drawn with a probability that
// grows with it, so play is varied but sensible:
//   + material won by a capture, minus the material the moved piece risks on its destination (a one-step exchange
//     estimate: attacked and undefended loses the piece; attacked by a cheaper piece loses the difference), which
//     makes hanging pieces and queen blunders rare without any search;
//   + checks (+1.5), checkmate (+20), castling (+2.5), promotions (queen +4; knight, rook, bishop small, so
//     under-promotions still occur now and then);
//   + developing knights and bishops early, central destinations (d4 e4 d5 e5, then the c3-f6 box);
//   - early queen, rook and king walks, knights on the rim, minor pieces returning home, early flank pawn moves (a, b, f, g, h).
// The draw is sharpened: probability ∝ exp(1.6 × score).
// A game that ends (mate, stalemate) before the plies an episode needs is discarded by the caller.
import { Chess, type Color, type PieceSymbol, type Square } from 'chess.js';
import type { Rng } from '../../core/rng.ts';

const VALUE: Record<PieceSymbol, number> = { p: 1, n: 3, b: 3, r: 5, q: 9, k: 0 };
const CENTER = new Set(['d4', 'e4', 'd5', 'e5']);
const WIDE_CENTER = /^[c-f][3-6]$/;
const FLANK_PAWN_PENALTY: Record<string, number> = { a: 0.8, b: 0.6, f: 0.6, g: 0.8, h: 0.8 };
/** How sharply the draw prefers higher scores: probability ∝ exp(SHARPNESS × score). */
const SHARPNESS = 1.6;
const SAN_DEST = /([a-h][1-8])(=[QRBN])?[+#]?$/;

/** Heuristic score of one legal move, given in SAN, in the current position. */
export function scoreMove(chess: Chess, san: string, ply: number): number {
  const us: Color = chess.turn();
  const them: Color = us === 'w' ? 'b' : 'w';
  if (san.startsWith('O-O')) return 2.5 + (san.endsWith('+') ? 1.5 : 0);
  let score = 0;
  if (san.endsWith('#')) score += 20;
  else if (san.endsWith('+')) score += 1.5;
  const piece: PieceSymbol = /^[KQRBN]/.test(san) ? (san[0].toLowerCase() as PieceSymbol) : 'p';
  const dest = (SAN_DEST.exec(san)?.[1] ?? 'a1') as Square;
  const isCapture = san.includes('x');
  const promotion = /=([QRBN])/.exec(san)?.[1].toLowerCase() as PieceSymbol | undefined;
  const captured = isCapture ? (chess.get(dest)?.type ?? 'p') : undefined; // an empty destination is en passant
  const movedValue = promotion ? VALUE[promotion] : VALUE[piece];
  let gain = captured ? VALUE[captured] : 0;
  if (chess.isAttacked(dest, them)) {
    const attackers = chess.attackers(dest, them);
    const cheapest = Math.min(...attackers.map((s) => VALUE[chess.get(s)?.type ?? 'q']));
    // The moving piece already attacks its destination unless it is a pawn push, so it is not its own defender.
    const selfAttacks = piece !== 'p' || isCapture;
    const defended = chess.attackers(dest, us).length - (selfAttacks ? 1 : 0) > 0;
    gain -= defended ? Math.max(0, movedValue - cheapest) : movedValue;
  }
  score += 0.6 * gain;
  if (promotion) score += promotion === 'q' ? 4 : promotion === 'n' ? 0.7 : 0.3;
  if (ply < 20 && (piece === 'n' || piece === 'b')) score += 1;
  if (piece === 'n' && (dest[0] === 'a' || dest[0] === 'h')) score -= 1; // knights on the rim
  if ((piece === 'n' || piece === 'b') && dest[1] === (us === 'w' ? '1' : '8')) score -= 1.5; // undeveloping
  if (ply < 20 && piece === 'p' && !isCapture) score -= FLANK_PAWN_PENALTY[dest[0]] ?? 0;
  if (ply < 12 && piece === 'q') score -= 1;
  if (ply < 16 && piece === 'r') score -= 0.5;
  if (piece === 'k' && ply < 40) score -= 1.5;
  if (CENTER.has(dest)) score += 1;
  else if (WIDE_CENTER.test(dest)) score += 0.4;
  return score;
}

/** Pick the next move (SAN) for the side to move, or null when the game is over. */
export function chooseMove(chess: Chess, rng: Rng, ply: number): string | null {
  const moves = chess.moves();
  if (moves.length === 0) return null;
  const scores = moves.map((san) => scoreMove(chess, san, ply));
  const best = Math.max(...scores);
  return moves[rng.weighted(scores.map((s) => Math.exp(SHARPNESS * (s - best))))];
}

/** Play one synthetic move on the board and return it in UCI, or null when the side to move has no legal move. */
export function playSyntheticMove(chess: Chess, rng: Rng, ply: number): string | null {
  const san = chooseMove(chess, rng, ply);
  if (san === null) return null;
  const move = chess.move(san);
  return move.from + move.to + (move.promotion ?? '');
}
