// FEN as python-chess 1.11 reads and writes it, the rules the MET-Bench harness scores chess answers by: what
// Board(fen) accepts (set_fen: whitespace-separated fields, missing trailing fields filled in, each field's syntax),
// and the normalised FEN that Board.fen() writes back (castling rights that cannot be used dropped and written
// KQkq, an en passant square only when an en passant capture is legal, clocks as plain integers, fullmove at least 1).
// board_fen() is the placement alone. Pure string and square work; no Python.
import { hasLegalEnPassant } from './en-passant.ts';
import { fileOf, kingOf, rankOf, SQUARE_NAMES, type Piece, type PieceType, type Position } from './chess-position.ts';
import { pyInt, pySplit } from './python-str.ts';

/** The castling field: "-" or up to two white then up to two black letters (K, Q or a rook's file), as Board(fen) has it. */
const CASTLING_FIELD = /^(?:-|[KQABCDEFGH]{0,2}[kqabcdefgh]{0,2})$/;

/** Board(fen)'s starting position, also what a missing initial state means to the harness. */
export const STARTING_FEN = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';

/**
 * A placement character's piece: the ASCII letters, and U+212A KELVIN SIGN, which Python lower-cases to "k" and calls
 * upper case (a white king to python-chess).
 */
function pieceOf(ch: string): Piece | null {
  if (ch === '\u212a') return { type: 'k', white: true };
  const type = ch.toLowerCase();
  if (ch.length !== 1 || !'pnbrqk'.includes(type)) return null;
  return { type: type as PieceType, white: ch !== type };
}

/** The placement field onto the squares (a8 first in the text, a1 = 0 in the result), or null as _set_board_fen rejects. */
function readPlacement(field: string): { squares: (Piece | null)[]; promoted: boolean[] } | null {
  const rows = field.split('/');
  if (rows.length !== 8) return null;
  const squares: (Piece | null)[] = new Array(64).fill(null);
  const promoted: boolean[] = new Array(64).fill(false);
  for (let r = 0; r < 8; r++) {
    let width = 0;
    let previous: 'digit' | 'piece' | 'other' = 'other';
    for (const ch of rows[r]) {
      // Rows run from rank 8 down; python-chess checks a row's width only at its end, so a long row fills nothing wrong.
      const square = (7 - r) * 8 + width;
      if (ch >= '1' && ch <= '8') {
        if (previous === 'digit') return null;
        width += Number(ch);
        previous = 'digit';
      } else if (ch === '~') {
        if (previous !== 'piece') return null;
        if (width >= 1 && width <= 8) promoted[square - 1] = true;
        previous = 'other';
      } else {
        const piece = pieceOf(ch);
        if (!piece) return null;
        if (width < 8) squares[square] = piece;
        width += 1;
        previous = 'piece';
      }
    }
    if (width !== 8) return null;
  }
  return { squares, promoted };
}

/** _set_castling_fen: each letter names a rook square (K/k: the outermost rook beyond the king, or the h-file). */
function castlingSquares(field: string, p: Omit<Position, 'castling'>): number[] {
  const rights = new Set<number>();
  if (field === '-') return [];
  for (const flag of field) {
    const white = flag !== flag.toLowerCase();
    const back = white ? 0 : 7;
    const rooks: number[] = [];
    for (let f = 0; f < 8; f++) {
      const piece = p.squares[back * 8 + f];
      if (piece?.type === 'r' && piece.white === white) rooks.push(back * 8 + f);
    }
    const king = kingOf(p, white);
    const lower = flag.toLowerCase();
    if (lower === 'q') {
      // python-chess compares lsb(rooks), which is -1 without rooks, with the king's square: no rook, no right.
      if (king !== null && (rooks[0] ?? -1) < king) {
        if (rooks.length > 0) rights.add(rooks[0]);
      } else rights.add(back * 8);
    } else if (lower === 'k') {
      const rook = rooks[rooks.length - 1] ?? -1;
      if (king !== null && king < rook) rights.add(rook);
      else rights.add(back * 8 + 7);
    } else rights.add(back * 8 + 'abcdefgh'.indexOf(lower));
  }
  return [...rights].sort((a, b) => a - b);
}

/** Board(fen): the position, or null where python-chess raises ValueError. */
export function parseFen(text: string): Position | null {
  const parts = pySplit(text);
  if (parts.length === 0 || parts.length > 6) return null;
  const [placement, turn = 'w', castling = '-', ep = '-', halfmove = '0', fullmove = '1'] = parts;
  if (turn !== 'w' && turn !== 'b') return null;
  if (!CASTLING_FIELD.test(castling)) return null;
  const epSquare = ep === '-' ? null : SQUARE_NAMES.indexOf(ep);
  if (epSquare === -1) return null;
  const half = pyInt(halfmove);
  const full = pyInt(fullmove);
  if (half === null || half < 0n || full === null || full < 0n) return null;
  const board = readPlacement(placement);
  if (!board) return null;
  const position = {
    ...board,
    whiteToMove: turn === 'w',
    ep: epSquare,
    halfmove: half,
    // "0 is allowed for compatibility, but later replaced with 1."
    fullmove: full < 1n ? 1n : full,
  };
  return { ...position, castling: castlingSquares(castling, position) };
}

const symbol = (piece: Piece): string => (piece.white ? piece.type.toUpperCase() : piece.type);

/** board_fen(): the placement, rank 8 first, without promoted marks. */
export function boardFen(p: Position): string {
  const ranks: string[] = [];
  for (let r = 7; r >= 0; r--) {
    let text = '';
    let empty = 0;
    for (let f = 0; f < 8; f++) {
      const piece = p.squares[r * 8 + f];
      if (!piece) empty++;
      else {
        if (empty > 0) text += String(empty);
        empty = 0;
        text += symbol(piece);
      }
    }
    if (empty > 0) text += String(empty);
    ranks.push(text);
  }
  return ranks.join('/');
}

/** clean_castling_rights(): rights on a rook in its corner, with a non-promoted king of its colour on e1 or e8. */
export function cleanCastling(p: Position): number[] {
  const keep = (square: number, white: boolean, kingSquare: number) => {
    const piece = p.squares[square];
    const king = p.squares[kingSquare];
    return (
      piece?.type === 'r' &&
      piece.white === white &&
      king?.type === 'k' &&
      king.white === white &&
      !p.promoted[kingSquare]
    );
  };
  return p.castling.filter(
    (s) => ([0, 7].includes(s) && keep(s, true, 4)) || ([56, 63].includes(s) && keep(s, false, 60)),
  );
}

/** castling_xfen(): K/Q (k/q) for the outermost rook on a side, the rook's file letter when another rook is outside it. */
function castlingText(p: Position): string {
  let text = '';
  const clean = cleanCastling(p);
  for (const white of [true, false]) {
    const king = kingOf(p, white);
    if (king === null) continue;
    const back = white ? 0 : 7;
    for (const rook of clean.filter((s) => rankOf(s) === back).reverse()) {
      const aSide = fileOf(rook) < fileOf(king);
      const others = [0, 1, 2, 3, 4, 5, 6, 7]
        .map((f) => back * 8 + f)
        .filter((s) => s !== rook && p.squares[s]?.type === 'r' && p.squares[s]!.white === white);
      const letter = others.some((o) => fileOf(o) < fileOf(rook) === aSide)
        ? 'abcdefgh'[fileOf(rook)]
        : aSide
          ? 'q'
          : 'k';
      text += white ? letter.toUpperCase() : letter;
    }
  }
  return text === '' ? '-' : text;
}

/** Board.fen(): the normalised FEN, the form the harness compares for an exact match. */
export function normalFen(p: Position): string {
  return [
    boardFen(p),
    p.whiteToMove ? 'w' : 'b',
    castlingText(p),
    p.ep !== null && hasLegalEnPassant(p) ? SQUARE_NAMES[p.ep] : '-',
    p.halfmove.toString(),
    p.fullmove.toString(),
  ].join(' ');
}

/** The 64 squares' contents as piece letters ('.' empty), a8 first: what per-square accuracy compares. */
export function squareLetters(p: Position): string[] {
  const out: string[] = [];
  for (let r = 7; r >= 0; r--)
    for (let f = 0; f < 8; f++) out.push(p.squares[r * 8 + f] ? symbol(p.squares[r * 8 + f]!) : '.');
  return out;
}
