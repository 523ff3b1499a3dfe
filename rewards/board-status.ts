// Is a position legal? python-chess's Board.status() == STATUS_VALID, the harness's "legal board": pieces on the
// board, one king a side, at most 16 pieces and 8 pawns a side, no pawn on the first or last rank, castling rights
// only where they can be used, an en passant square only behind a pawn that could just have made a double push, the
// side not to move not in check, and a check the side to move could really be in (at most two checkers, not two on one
// line through the king, and, after a double push, only one the push could have uncovered). Written from its rules.
import { attackers, kingOf, line, occupancy, rankOf, type Position } from './chess-position.ts';
import { cleanCastling } from './fen.ts';

/** _valid_ep_square(): the en passant square when a pawn just double-pushed past it, else null. */
function validEpSquare(p: Position): number | null {
  const ep = p.ep;
  if (!ep) return null;
  const [epRank, pushed, origin] = p.whiteToMove ? [5, ep - 8, ep + 8] : [2, ep + 8, ep - 8];
  if (rankOf(ep) !== epRank) return null;
  const pawn = p.squares[pushed];
  if (pawn?.type !== 'p' || pawn.white === p.whiteToMove) return null;
  if (p.squares[ep] !== null) return null;
  if (origin >= 0 && origin < 64 && p.squares[origin] !== null) return null;
  return ep;
}

/** The reasons python-chess's status() would give, by its flag names; empty for a valid position. */
export function statusProblems(p: Position): string[] {
  const problems: string[] = [];
  const pieces = p.squares.flatMap((piece, square) => (piece ? [{ ...piece, square }] : []));
  const count = (white: boolean, type?: string) =>
    pieces.filter((x) => x.white === white && (type === undefined || x.type === type)).length;
  if (pieces.length === 0) problems.push('EMPTY');
  if (count(true, 'k') === 0) problems.push('NO_WHITE_KING');
  if (count(false, 'k') === 0) problems.push('NO_BLACK_KING');
  if (count(true, 'k') + count(false, 'k') > 2) problems.push('TOO_MANY_KINGS');
  if (count(true) > 16) problems.push('TOO_MANY_WHITE_PIECES');
  if (count(false) > 16) problems.push('TOO_MANY_BLACK_PIECES');
  if (count(true, 'p') > 8) problems.push('TOO_MANY_WHITE_PAWNS');
  if (count(false, 'p') > 8) problems.push('TOO_MANY_BLACK_PAWNS');
  if (pieces.some((x) => x.type === 'p' && (rankOf(x.square) === 0 || rankOf(x.square) === 7)))
    problems.push('PAWNS_ON_BACKRANK');
  if (cleanCastling(p).join() !== p.castling.join()) problems.push('BAD_CASTLING_RIGHTS');
  const validEp = validEpSquare(p);
  if (p.ep !== validEp) problems.push('INVALID_EP_SQUARE');
  // was_into_check(): the side that just moved must not be in check.
  const theirKing = kingOf(p, !p.whiteToMove);
  if (theirKing !== null && attackers(p, p.whiteToMove, theirKing).length > 0) problems.push('OPPOSITE_CHECK');
  const ourKing = kingOf(p, p.whiteToMove);
  const checkers = ourKing === null ? [] : attackers(p, !p.whiteToMove, ourKing);
  const ourKings = pieces.filter((x) => x.type === 'k' && x.white === p.whiteToMove && !p.promoted[x.square]);
  if (checkers.length > 0) {
    if (checkers.length > 2) problems.push('TOO_MANY_CHECKERS');
    let impossible: boolean;
    if (validEp !== null) {
      // After the double push, the check must come from the pushed pawn or be one the push uncovered.
      const pushedTo = validEp ^ 8;
      const pushedFrom = validEp ^ 24;
      const before = occupancy(p);
      before[pushedTo] = false;
      before[pushedFrom] = true;
      impossible =
        checkers.length > 1 ||
        (checkers[checkers.length - 1] !== pushedTo &&
          ourKings.some((k) => attackers(p, !p.whiteToMove, k.square, before).length > 0));
    } else {
      const onOneLine =
        checkers.length === 2 && line(checkers[0], checkers[1]).some((s) => ourKings.some((k) => k.square === s));
      impossible = checkers.length > 2 || onOneLine;
    }
    if (impossible) problems.push('IMPOSSIBLE_CHECK');
  }
  return problems;
}

/** The harness's legal_board: status() == STATUS_VALID. */
export function isLegalPosition(p: Position): boolean {
  return statusProblems(p).length === 0;
}
