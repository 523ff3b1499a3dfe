// Whether the side to move has a legal en passant capture: python-chess's has_legal_en_passant(), which decides whether
// Board.fen() writes the en passant square (after a double push that no pawn can capture, "e3" becomes "-"). A capture
// is pseudo-legal when the square is empty and a pawn of the mover stands beside it on the right rank (python-chess
// does not ask whether a pawn was pushed there); it is legal when it does not leave the mover's king in check:
// it must answer a single check (block it, or take the checking piece), follow a pin's line, and not open the rank or
// diagonal the two pawns leave (the "skewer").
import {
  attackers,
  between,
  DIAGONAL_DELTAS,
  kingOf,
  occupancy,
  pawnAttacks,
  pinLine,
  RANK_DELTAS,
  rankOf,
  slidingAttacks,
  type Position,
} from './chess-position.ts';

/** _ep_skewered(): with the pushed pawn and the capturer gone and the capturer on the en passant square, is the king hit? */
function skewered(p: Position, king: number, capturer: number, ep: number): boolean {
  const lastDouble = ep + (p.whiteToMove ? -8 : 8);
  const occupied = occupancy(p);
  occupied[lastDouble] = false;
  occupied[capturer] = false;
  occupied[ep] = true;
  const enemy = (square: number, types: string) => {
    const piece = p.squares[square];
    return piece !== null && piece.white !== p.whiteToMove && types.includes(piece.type);
  };
  return (
    slidingAttacks(king, occupied, RANK_DELTAS).some((s) => enemy(s, 'rq')) ||
    slidingAttacks(king, occupied, DIAGONAL_DELTAS).some((s) => enemy(s, 'bq'))
  );
}

/** is_into_check() for the capture capturer × ep: true when it would leave (or keep) the mover's king in check. */
function intoCheck(p: Position, capturer: number, ep: number): boolean {
  const king = kingOf(p, p.whiteToMove);
  if (king === null) return false;
  const checkers = attackers(p, !p.whiteToMove, king);
  if (checkers.length > 0) {
    // _generate_evasions() yields this capture only against one checker: as a block, or as taking the pushed pawn.
    const checker = checkers[checkers.length - 1];
    const lastDouble = ep + (p.whiteToMove ? -8 : 8);
    const evasion = checkers.length === 1 && (between(king, checker).includes(ep) || lastDouble === checker);
    if (!evasion) return true;
  }
  // _is_safe() for an en passant capture: along the pin's line if pinned, and no skewer.
  const pin = pinLine(p, p.whiteToMove, capturer);
  return !((pin === null || pin.includes(ep)) && !skewered(p, king, capturer, ep));
}

export function hasLegalEnPassant(p: Position): boolean {
  const ep = p.ep;
  // python-chess tests `not self.ep_square`, so an en passant square of a1 (square 0) counts as none.
  if (!ep || p.squares[ep] !== null) return false;
  const rank = p.whiteToMove ? 4 : 3;
  const capturers = pawnAttacks(!p.whiteToMove, ep).filter((s) => {
    const piece = p.squares[s];
    return piece?.type === 'p' && piece.white === p.whiteToMove && rankOf(s) === rank;
  });
  return capturers.reverse().some((capturer) => !intoCheck(p, capturer, ep));
}
