// FEN helpers shared by the chess reward and the chess environment: read a FEN's six fields, expand its piece
// placement into 64 squares, and judge whether a board could occur in a game. Pure string work, no chess engine, so
// rewards stay cheap enough to score every GRPO rollout.
//
// What counts as a valid FEN here (the syntax python-chess's Board(fen) accepts, which the reference evaluator uses):
// a placement of exactly 8 ranks, each summing to 8 squares, followed by 0-5 of the usual fields, each well formed:
// side to move (w|b), castling (- or up to four of KQkq, no repeats), en passant (- or a3-h3/a6-h6), halfmove clock and
// fullmove number (non-negative integers). A placement-only FEN is valid: it is scored on its board.

/** One square's content: a piece letter (PNBRQK white, pnbrqk black) or '.' for empty. */
export type SquareContent = string;

export interface Fen {
  /** The piece-placement field, e.g. "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR". */
  placement: string;
  /** The remaining fields as given (0 to 5 of them). */
  fields: string[];
  /** 64 squares, a8 first, then b8 … h8, a7 … h1 (the order a FEN lists them). */
  board: SquareContent[];
  /** All six fields present. */
  complete: boolean;
  /** Fields joined by single spaces. */
  text: string;
}

const PIECE = /^[pnbrqkPNBRQK]$/;
const FIELD_PATTERNS: RegExp[] = [
  /^[wb]$/, // side to move
  /^(-|(?!.*(.).*\2)[KQkq]{1,4})$/, // castling rights, no letter twice
  /^(-|[a-h][36])$/, // en passant target square
  /^\d+$/, // halfmove clock
  /^\d+$/, // fullmove number
];

/** Expand a placement field into 64 squares, or null when it is not exactly 8 ranks of 8 squares. */
export function expandPlacement(placement: string): SquareContent[] | null {
  const ranks = placement.split('/');
  if (ranks.length !== 8) return null;
  const board: SquareContent[] = [];
  for (const rank of ranks) {
    let width = 0;
    let lastWasDigit = false;
    for (const ch of rank) {
      if (ch >= '1' && ch <= '8') {
        if (lastWasDigit) return null; // "44" is not a FEN rank even if it sums to 8
        width += Number(ch);
        for (let i = 0; i < Number(ch); i++) board.push('.');
        lastWasDigit = true;
      } else if (PIECE.test(ch)) {
        width += 1;
        board.push(ch);
        lastWasDigit = false;
      } else {
        return null;
      }
      if (width > 8) return null;
    }
    if (width !== 8) return null;
  }
  return board;
}

/** True when `token` is well formed as the FEN field at position `index` (0 = side to move … 4 = fullmove). */
export function isFenField(token: string, index: number): boolean {
  const pattern = FIELD_PATTERNS[index];
  return pattern !== undefined && pattern.test(token);
}

/** Parse a whole string as one FEN (whitespace-separated fields); null when it is not exactly one valid FEN. */
export function parseFen(text: string): Fen | null {
  const tokens = text
    .trim()
    .split(/\s+/)
    .filter((t) => t !== '');
  if (tokens.length === 0 || tokens.length > 6) return null;
  const board = expandPlacement(tokens[0]);
  if (!board) return null;
  const fields = tokens.slice(1);
  if (!fields.every((f, i) => isFenField(f, i))) return null;
  return { placement: tokens[0], fields, board, complete: fields.length === 5, text: tokens.join(' ') };
}

/** Build a Fen from a placement and the fields that follow it (already checked by the caller). */
export function fenFromParts(placement: string, fields: string[]): Fen | null {
  return parseFen([placement, ...fields].join(' '));
}

/** Compress 64 squares (a8 first) back into a placement field. */
export function placementOf(board: readonly SquareContent[]): string {
  const ranks: string[] = [];
  for (let r = 0; r < 8; r++) {
    let out = '';
    let empty = 0;
    for (let f = 0; f < 8; f++) {
      const c = board[r * 8 + f];
      if (c === '.') empty++;
      else {
        if (empty > 0) out += String(empty);
        empty = 0;
        out += c;
      }
    }
    if (empty > 0) out += String(empty);
    ranks.push(out);
  }
  return ranks.join('/');
}

/**
 * A board that could occur in a game, by cheap necessary conditions: exactly one king of each colour, kings not on
 * adjacent squares, no pawn on the first or last rank, at most 8 pawns and at most 16 pieces per side.
 * (Not checked: whether the side not to move is in check, or whether the position is reachable.)
 */
export function isLegalBoard(board: readonly SquareContent[]): boolean {
  const count = (p: string) => board.reduce((n, c) => n + (c === p ? 1 : 0), 0);
  if (count('K') !== 1 || count('k') !== 1) return false;
  for (let f = 0; f < 8; f++) {
    for (const index of [f, 56 + f]) if (board[index] === 'P' || board[index] === 'p') return false;
  }
  if (count('P') > 8 || count('p') > 8) return false;
  const white = board.filter((c) => c !== '.' && c === c.toUpperCase()).length;
  const black = board.filter((c) => c !== '.' && c === c.toLowerCase()).length;
  if (white > 16 || black > 16) return false;
  const wk = board.indexOf('K');
  const bk = board.indexOf('k');
  const distance = Math.max(Math.abs((wk % 8) - (bk % 8)), Math.abs(Math.floor(wk / 8) - Math.floor(bk / 8)));
  return distance > 1;
}
