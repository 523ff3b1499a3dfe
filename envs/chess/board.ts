// A small, fast chess board (0x88 mailbox with make/unmake) for the synthetic game player, which needs thousands of
// legal-move generations, attack tests and FENs per second; chess.js builds SAN and before/after FENs for every move
// it generates, far more work per move than this job needs. Games files are still replayed with chess.js, the reference for
// legality. This board must agree with chess.js exactly: the tests compare legal move lists and FENs (including
// chess.js's rule of writing the en passant square only when an en passant capture is legal) along thousands of plies,
// and check perft counts.
import { UserError } from '../../core/errors.ts';

export type Side = 0 | 8;
export const WHITE: Side = 0;
export const BLACK: Side = 8;
export const PAWN = 1;
export const KNIGHT = 2;
export const BISHOP = 3;
export const ROOK = 4;
export const QUEEN = 5;
export const KING = 6;

export const FLAG_CAPTURE = 1;
const FLAG_EN_PASSANT = 2;
export const FLAG_CASTLE = 4;
const FLAG_DOUBLE_PUSH = 8;

/** A move on the 0x88 board (square = rank × 16 + file, rank 0 = the first rank). Pieces are type | side. */
export interface BoardMove {
  from: number;
  to: number;
  /** Moving piece, with its side bit. */
  piece: number;
  /** Captured piece type (PAWN … QUEEN), 0 for none. */
  captured: number;
  /** Promotion piece type, 0 for none. */
  promotion: number;
  flags: number;
}

interface UndoRecord {
  move: BoardMove;
  castling: number;
  ep: number;
  halfmove: number;
  fullmove: number;
}

const KNIGHT_STEPS = [33, 31, 18, 14, -33, -31, -18, -14];
const KING_STEPS = [1, -1, 16, -16, 17, 15, -17, -15];
const DIAGONALS = [17, 15, -17, -15];
const LINES = [1, -1, 16, -16];
const PROMOTIONS = [QUEEN, ROOK, BISHOP, KNIGHT];
const LETTERS = ' pnbrqk';
// Castling-right bits and the corner squares whose piece leaving or being taken removes them.
const CASTLE_WK = 1;
const CASTLE_WQ = 2;
const CASTLE_BK = 4;
const CASTLE_BQ = 8;
const CORNER_RIGHTS: Record<number, number> = { 0: CASTLE_WQ, 7: CASTLE_WK, 112: CASTLE_BQ, 119: CASTLE_BK };

function squareName(sq: number): string {
  return 'abcdefgh'[sq & 7] + String((sq >> 4) + 1);
}

export function squareIndex(name: string): number {
  return (name.charCodeAt(1) - 49) * 16 + (name.charCodeAt(0) - 97);
}

export function moveToUci(move: BoardMove): string {
  return squareName(move.from) + squareName(move.to) + (move.promotion ? LETTERS[move.promotion] : '');
}

export class Board {
  readonly squares = new Int8Array(128);
  turn: Side = WHITE;
  castling = 0;
  /** The square a pawn just skipped with a double push, or -1. */
  ep = -1;
  halfmove = 0;
  fullmove = 1;
  private kings = [-1, -1];
  private history: UndoRecord[] = [];

  static fromFen(fen: string): Board {
    const board = new Board();
    const [placement, side = 'w', castling = '-', ep = '-', half = '0', full = '1'] = fen.trim().split(/\s+/);
    const ranks = placement.split('/');
    if (ranks.length !== 8) throw new UserError(`not a FEN: ${fen}`);
    ranks.forEach((row, r) => {
      let file = 0;
      for (const ch of row) {
        if (ch >= '1' && ch <= '8') file += Number(ch);
        else {
          const type = LETTERS.indexOf(ch.toLowerCase());
          if (type < 1 || file > 7) throw new UserError(`not a FEN: ${fen}`);
          const side: Side = ch === ch.toUpperCase() ? WHITE : BLACK;
          const sq = (7 - r) * 16 + file;
          board.squares[sq] = type | side;
          if (type === KING) board.kings[side >> 3] = sq;
          file++;
        }
      }
    });
    board.turn = side === 'b' ? BLACK : WHITE;
    for (const [ch, bit] of [
      ['K', CASTLE_WK],
      ['Q', CASTLE_WQ],
      ['k', CASTLE_BK],
      ['q', CASTLE_BQ],
    ] as const) {
      if (castling.includes(ch)) board.castling |= bit;
    }
    board.ep = ep === '-' ? -1 : squareIndex(ep);
    board.halfmove = Number(half);
    board.fullmove = Number(full);
    return board;
  }

  pieceAt(sq: number): number {
    return this.squares[sq];
  }

  /** Is `sq` attacked by a piece of side `by`? (No allocation: this is the hot path of legality tests.) */
  isAttacked(sq: number, by: Side): boolean {
    return this.scanAttackers(sq, by, null);
  }

  /** Squares of the pieces of side `by` that attack `sq`. */
  attackers(sq: number, by: Side): number[] {
    const out: number[] = [];
    this.scanAttackers(sq, by, out);
    return out;
  }

  /** Find attackers of `sq`; collect them into `out`, or return at the first one when `out` is null. */
  private scanAttackers(sq: number, by: Side, out: number[] | null): boolean {
    const s = this.squares;
    let found = false;
    const pawn = PAWN | by;
    const p1 = by === WHITE ? sq - 15 : sq + 15;
    const p2 = by === WHITE ? sq - 17 : sq + 17;
    if (!(p1 & 0x88) && s[p1] === pawn) {
      if (out === null) return true;
      out.push(p1);
      found = true;
    }
    if (!(p2 & 0x88) && s[p2] === pawn) {
      if (out === null) return true;
      out.push(p2);
      found = true;
    }
    const knight = KNIGHT | by;
    const king = KING | by;
    for (let k = 0; k < 8; k++) {
      const from = sq + KNIGHT_STEPS[k];
      if (!(from & 0x88) && s[from] === knight) {
        if (out === null) return true;
        out.push(from);
        found = true;
      }
      const next = sq + KING_STEPS[k];
      if (!(next & 0x88) && s[next] === king) {
        if (out === null) return true;
        out.push(next);
        found = true;
      }
    }
    const queen = QUEEN | by;
    for (let k = 0; k < 8; k++) {
      const step = KING_STEPS[k]; // the eight ray directions: the first four are lines, the rest diagonals
      const slider = k < 4 ? ROOK | by : BISHOP | by;
      for (let from = sq + step; !(from & 0x88); from += step) {
        const p = s[from];
        if (p === 0) continue;
        if (p === slider || p === queen) {
          if (out === null) return true;
          out.push(from);
          found = true;
        }
        break;
      }
    }
    return found;
  }

  inCheck(side: Side = this.turn): boolean {
    return this.isAttacked(this.kings[side >> 3], (side ^ 8) as Side);
  }

  private push(moves: BoardMove[], from: number, to: number, piece: number, captured: number, flags: number): void {
    const type = piece & 7;
    const lastRank = (piece & 8) === WHITE ? 7 : 0;
    if (type === PAWN && to >> 4 === lastRank) {
      for (const promotion of PROMOTIONS) moves.push({ from, to, piece, captured, promotion, flags });
    } else {
      moves.push({ from, to, piece, captured, promotion: 0, flags });
    }
  }

  /** Moves that obey piece movement but may leave the mover's king in check. */
  private pseudoLegalMoves(): BoardMove[] {
    const moves: BoardMove[] = [];
    const us = this.turn;
    const them = (us ^ 8) as Side;
    const s = this.squares;
    for (let from = 0; from < 128; from++) {
      if (from & 0x88) {
        from += 7;
        continue;
      }
      const piece = s[from];
      if (piece === 0 || (piece & 8) !== us) continue;
      const type = piece & 7;
      if (type === PAWN) {
        const forward = us === WHITE ? 16 : -16;
        const startRank = us === WHITE ? 1 : 6;
        const one = from + forward;
        if (!(one & 0x88) && s[one] === 0) {
          this.push(moves, from, one, piece, 0, 0);
          const two = one + forward;
          if (from >> 4 === startRank && s[two] === 0) this.push(moves, from, two, piece, 0, FLAG_DOUBLE_PUSH);
        }
        for (const side of [forward - 1, forward + 1]) {
          const to = from + side;
          if (to & 0x88) continue;
          const target = s[to];
          if (target !== 0 && (target & 8) === them) this.push(moves, from, to, piece, target & 7, FLAG_CAPTURE);
          else if (to === this.ep) this.push(moves, from, to, piece, PAWN, FLAG_CAPTURE | FLAG_EN_PASSANT);
        }
        continue;
      }
      const steps = type === KNIGHT ? KNIGHT_STEPS : type === BISHOP ? DIAGONALS : type === ROOK ? LINES : KING_STEPS;
      const slides = type === BISHOP || type === ROOK || type === QUEEN;
      for (const step of steps) {
        for (let to = from + step; !(to & 0x88); to += step) {
          const target = s[to];
          if (target === 0) this.push(moves, from, to, piece, 0, 0);
          else {
            if ((target & 8) === them) this.push(moves, from, to, piece, target & 7, FLAG_CAPTURE);
            break;
          }
          if (!slides) break;
        }
      }
      if (type === KING) this.castlingMoves(moves, from, piece);
    }
    return moves;
  }

  private castlingMoves(moves: BoardMove[], from: number, piece: number): void {
    const us = this.turn;
    const them = (us ^ 8) as Side;
    const home = us === WHITE ? 4 : 116;
    if (from !== home) return;
    const s = this.squares;
    const kingside = us === WHITE ? CASTLE_WK : CASTLE_BK;
    const queenside = us === WHITE ? CASTLE_WQ : CASTLE_BQ;
    if (this.castling & kingside && s[from + 1] === 0 && s[from + 2] === 0 && s[from + 3] === (ROOK | us)) {
      if (!this.isAttacked(from, them) && !this.isAttacked(from + 1, them) && !this.isAttacked(from + 2, them)) {
        moves.push({ from, to: from + 2, piece, captured: 0, promotion: 0, flags: FLAG_CASTLE });
      }
    }
    if (
      this.castling & queenside &&
      s[from - 1] === 0 &&
      s[from - 2] === 0 &&
      s[from - 3] === 0 &&
      s[from - 4] === (ROOK | us)
    ) {
      if (!this.isAttacked(from, them) && !this.isAttacked(from - 1, them) && !this.isAttacked(from - 2, them)) {
        moves.push({ from, to: from - 2, piece, captured: 0, promotion: 0, flags: FLAG_CASTLE });
      }
    }
  }

  legalMoves(): BoardMove[] {
    const us = this.turn;
    return this.pseudoLegalMoves().filter((move) => {
      this.make(move);
      const legal = !this.inCheck(us);
      this.unmake();
      return legal;
    });
  }

  /** Play a move given in UCI; throws when it is not legal here. */
  playUci(uci: string): BoardMove {
    const move = this.legalMoves().find((m) => moveToUci(m) === uci);
    if (!move) throw new Error(`illegal move ${uci} in ${this.fen()}`);
    this.make(move);
    return move;
  }

  make(move: BoardMove): void {
    this.history.push({ move, castling: this.castling, ep: this.ep, halfmove: this.halfmove, fullmove: this.fullmove });
    const s = this.squares;
    const us = this.turn;
    s[move.to] = move.promotion ? move.promotion | us : move.piece;
    s[move.from] = 0;
    if (move.flags & FLAG_EN_PASSANT) s[move.to + (us === WHITE ? -16 : 16)] = 0;
    if (move.flags & FLAG_CASTLE) {
      const kingside = move.to > move.from;
      s[kingside ? move.from + 1 : move.from - 1] = ROOK | us;
      s[kingside ? move.from + 3 : move.from - 4] = 0;
    }
    if ((move.piece & 7) === KING) {
      this.kings[us >> 3] = move.to;
      this.castling &= us === WHITE ? ~(CASTLE_WK | CASTLE_WQ) : ~(CASTLE_BK | CASTLE_BQ);
    }
    this.castling &= ~((CORNER_RIGHTS[move.from] ?? 0) | (CORNER_RIGHTS[move.to] ?? 0));
    this.ep = move.flags & FLAG_DOUBLE_PUSH ? (move.from + move.to) >> 1 : -1;
    this.halfmove = (move.piece & 7) === PAWN || move.captured ? 0 : this.halfmove + 1;
    if (us === BLACK) this.fullmove++;
    this.turn = (us ^ 8) as Side;
  }

  unmake(): void {
    const record = this.history.pop();
    if (!record) throw new Error('unmake without a move');
    const { move } = record;
    const s = this.squares;
    const us = (this.turn ^ 8) as Side;
    const them = this.turn;
    this.turn = us;
    this.castling = record.castling;
    this.ep = record.ep;
    this.halfmove = record.halfmove;
    this.fullmove = record.fullmove;
    s[move.from] = move.piece;
    if (move.flags & FLAG_EN_PASSANT) {
      s[move.to] = 0;
      s[move.to + (us === WHITE ? -16 : 16)] = PAWN | them;
    } else {
      s[move.to] = move.captured ? move.captured | them : 0;
    }
    if (move.flags & FLAG_CASTLE) {
      const kingside = move.to > move.from;
      s[kingside ? move.from + 3 : move.from - 4] = ROOK | us;
      s[kingside ? move.from + 1 : move.from - 1] = 0;
    }
    if ((move.piece & 7) === KING) this.kings[us >> 3] = move.from;
  }

  /** Could the side to move capture en passant right now without exposing its king? (chess.js's FEN rule.) */
  private epCaptureIsLegal(): boolean {
    if (this.ep < 0) return false;
    const us = this.turn;
    for (const from of us === WHITE ? [this.ep - 15, this.ep - 17] : [this.ep + 15, this.ep + 17]) {
      if (from & 0x88 || this.squares[from] !== (PAWN | us)) continue;
      this.make({
        from,
        to: this.ep,
        piece: PAWN | us,
        captured: PAWN,
        promotion: 0,
        flags: FLAG_CAPTURE | FLAG_EN_PASSANT,
      });
      const legal = !this.inCheck(us);
      this.unmake();
      if (legal) return true;
    }
    return false;
  }

  fen(): string {
    const rows: string[] = [];
    for (let rank = 7; rank >= 0; rank--) {
      let row = '';
      let empty = 0;
      for (let file = 0; file < 8; file++) {
        const p = this.squares[rank * 16 + file];
        if (p === 0) {
          empty++;
          continue;
        }
        if (empty > 0) row += String(empty);
        empty = 0;
        const letter = LETTERS[p & 7];
        row += (p & 8) === WHITE ? letter.toUpperCase() : letter;
      }
      if (empty > 0) row += String(empty);
      rows.push(row);
    }
    let castling = '';
    if (this.castling & CASTLE_WK) castling += 'K';
    if (this.castling & CASTLE_WQ) castling += 'Q';
    if (this.castling & CASTLE_BK) castling += 'k';
    if (this.castling & CASTLE_BQ) castling += 'q';
    const ep = this.epCaptureIsLegal() ? squareName(this.ep) : '-';
    return `${rows.join('/')} ${this.turn === WHITE ? 'w' : 'b'} ${castling || '-'} ${ep} ${this.halfmove} ${this.fullmove}`;
  }
}
