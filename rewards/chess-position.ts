// A chess position as python-chess 1.11's Board holds one after Board(fen) (squares, promoted marks, side to move,
// castling rights as rook squares, en passant square, clocks), and the attack geometry its FEN normalisation and
// status() read: lines and squares between, sliding and stepping attacks, attackers of a square, the king, pins.
// Written from python-chess's documented rules and bitboard definitions, so that the MET-Bench harness's verdicts can
// be computed without Python. Sets of squares are ascending arrays; python-chess's lsb/msb are their first/last.
// Squares are python-chess's numbers: a1 = 0, b1 = 1, …, h8 = 63.

export type PieceType = 'p' | 'n' | 'b' | 'r' | 'q' | 'k';

export interface Piece {
  type: PieceType;
  white: boolean;
}

export interface Position {
  /** 64 squares, a1 first. */
  squares: (Piece | null)[];
  /** Squares marked promoted ("Q~" in a FEN): such a king is no king for king(), castling and checks. */
  promoted: boolean[];
  whiteToMove: boolean;
  /** Castling rights as python-chess stores them: the squares of the rooks (or files) named, ascending. */
  castling: number[];
  /** The en passant square as written (python-chess keeps even an impossible one), or null for "-". */
  ep: number | null;
  halfmove: bigint;
  fullmove: bigint;
}

export const fileOf = (square: number): number => square & 7;
export const rankOf = (square: number): number => square >> 3;

/** "a1" … "h8", by square number. */
export const SQUARE_NAMES: readonly string[] = Array.from(
  { length: 64 },
  (_, s) => `${'abcdefgh'[fileOf(s)]}${rankOf(s) + 1}`,
);

const distance = (a: number, b: number): number =>
  Math.max(Math.abs(fileOf(a) - fileOf(b)), Math.abs(rankOf(a) - rankOf(b)));

const ROOK_DELTAS = [-8, -1, 1, 8];
const FILE_DELTAS = [-8, 8];
export const RANK_DELTAS = [-1, 1];
export const DIAGONAL_DELTAS = [-9, -7, 7, 9];
const KNIGHT_DELTAS = [-17, -15, -10, -6, 6, 10, 15, 17];
const KING_DELTAS = [-9, -8, -7, -1, 1, 7, 8, 9];

/** Squares reached from `square` along `deltas`, each ray stopping at (and including) the first occupied square. */
export function slidingAttacks(square: number, occupied: readonly boolean[], deltas: readonly number[]): number[] {
  const out: number[] = [];
  for (const delta of deltas) {
    for (let sq = square + delta, prev = square; sq >= 0 && sq < 64 && distance(sq, prev) <= 2; ) {
      out.push(sq);
      if (occupied[sq]) break;
      prev = sq;
      sq += delta;
    }
  }
  return out.sort((a, b) => a - b);
}

const EMPTY_BOARD: readonly boolean[] = new Array(64).fill(false);
const FULL_BOARD: readonly boolean[] = new Array(64).fill(true);

/** One step along each delta (knight, king, pawn attacks). */
const stepAttacks = (square: number, deltas: readonly number[]): number[] => slidingAttacks(square, FULL_BOARD, deltas);

/** Squares a pawn of the given colour on `square` attacks. */
export const pawnAttacks = (white: boolean, square: number): number[] => stepAttacks(square, white ? [7, 9] : [-7, -9]);

/** Squares on an empty board that a slider on `square` reaches along `deltas`. */
const emptyBoardRays = (square: number, deltas: readonly number[]): number[] =>
  slidingAttacks(square, EMPTY_BOARD, deltas);

/** The whole line (edge to edge) through a and b when they share a rank, file or diagonal; else empty. */
export function line(a: number, b: number): number[] {
  if (a === b) return [];
  const deltas = emptyBoardRays(a, DIAGONAL_DELTAS).includes(b)
    ? DIAGONAL_DELTAS.filter((d) => emptyBoardRays(a, [d]).includes(b))
    : emptyBoardRays(a, RANK_DELTAS).includes(b)
      ? RANK_DELTAS
      : emptyBoardRays(a, FILE_DELTAS).includes(b)
        ? FILE_DELTAS
        : [];
  if (deltas.length === 0) return [];
  // Along a diagonal, the line is that one diagonal through a in both directions.
  const both = deltas.length === 1 ? [deltas[0], -deltas[0]] : deltas;
  return [a, ...emptyBoardRays(a, both)].sort((x, y) => x - y);
}

/** The squares strictly between a and b on their line (empty when they share none). */
export function between(a: number, b: number): number[] {
  const [low, high] = a < b ? [a, b] : [b, a];
  return line(a, b).filter((s) => s > low && s < high);
}

export const occupancy = (p: Position): boolean[] => p.squares.map((s) => s !== null);

const isType = (p: Position, square: number, types: string): boolean => {
  const piece = p.squares[square];
  return piece !== null && types.includes(piece.type);
};

/** python-chess's king(): the highest square holding a non-promoted king of that colour, or null. */
export function kingOf(p: Pick<Position, 'squares' | 'promoted'>, white: boolean): number | null {
  for (let s = 63; s >= 0; s--) {
    const piece = p.squares[s];
    if (piece?.type === 'k' && piece.white === white && !p.promoted[s]) return s;
  }
  return null;
}

/** Squares of `white`'s pieces that attack `square`, sliders seen through `occupied` (default: the board's). */
export function attackers(p: Position, white: boolean, square: number, occupied = occupancy(p)): number[] {
  const found = new Set<number>();
  for (const s of stepAttacks(square, KING_DELTAS)) if (isType(p, s, 'k')) found.add(s);
  for (const s of stepAttacks(square, KNIGHT_DELTAS)) if (isType(p, s, 'n')) found.add(s);
  for (const s of slidingAttacks(square, occupied, ROOK_DELTAS)) if (isType(p, s, 'rq')) found.add(s);
  for (const s of slidingAttacks(square, occupied, DIAGONAL_DELTAS)) if (isType(p, s, 'bq')) found.add(s);
  // A pawn of `white` attacks `square` from the squares a pawn of the other colour on `square` would attack.
  for (const s of pawnAttacks(!white, square)) if (isType(p, s, 'p')) found.add(s);
  return [...found].filter((s) => p.squares[s]!.white === white).sort((a, b) => a - b);
}

/**
 * pin_mask(): when `square` is the only piece between `white`'s king and an enemy slider on one of the king's lines,
 * the squares of that line (the piece may move only along it); else null (no pin: any square).
 */
export function pinLine(p: Position, white: boolean, square: number): number[] | null {
  const king = kingOf(p, white);
  if (king === null) return null;
  const occupied = occupancy(p);
  for (const [deltas, sliders] of [
    [FILE_DELTAS, 'rq'],
    [RANK_DELTAS, 'rq'],
    [DIAGONAL_DELTAS, 'bq'],
  ] as const) {
    const rays = emptyBoardRays(king, deltas);
    if (!rays.includes(square)) continue;
    const snipers = rays.filter((s) => isType(p, s, sliders) && p.squares[s]!.white !== white);
    for (const sniper of snipers.reverse()) {
      const blockers = between(sniper, king).filter((s) => occupied[s] || s === square);
      if (blockers.length === 1 && blockers[0] === square) return line(king, sniper);
    }
    // Only the first family of lines that holds the square is looked at, as python-chess does.
    break;
  }
  return null;
}
