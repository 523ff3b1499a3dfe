// The placement field of a FEN as 64 squares and back, a8 first (the order a FEN lists them), '.' for an empty square:
// what the view draws and the random baseline writes. Only the six piece letters and the digits 1-8, each rank exactly
// eight squares; scoring reads FENs with python-chess's rules instead (rewards/fen.ts).

/** One square's content: a piece letter (PNBRQK white, pnbrqk black) or '.' for empty. */
type SquareContent = string;

const PIECE = /^[pnbrqkPNBRQK]$/;

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
