// UCI move text: "e2e4", promotions "a7a8q", castling as the king's move "e1g1". Parsing into board coordinates is
// shared by the renderer (which squares to colour), the decoder and the game loaders.

export type PromotionPiece = 'q' | 'r' | 'b' | 'n';
export const PROMOTION_PIECES: readonly PromotionPiece[] = ['q', 'r', 'b', 'n'];

/** A square as file 0-7 (a-h) and rank 0-7 (1-8). */
export interface SquareCoord {
  file: number;
  rank: number;
}

export interface UciMove {
  from: SquareCoord;
  to: SquareCoord;
  promotion: PromotionPiece | null;
}

export const UCI_PATTERN = /^[a-h][1-8][a-h][1-8][qrbn]?$/;

export function squareName(square: SquareCoord): string {
  return 'abcdefgh'[square.file] + String(square.rank + 1);
}

function parseSquare(name: string): SquareCoord {
  return { file: name.charCodeAt(0) - 97, rank: name.charCodeAt(1) - 49 };
}

/** Parse UCI text; null when it is not a well-formed UCI move (legality is not checked here). */
export function parseUci(text: string): UciMove | null {
  if (!UCI_PATTERN.test(text)) return null;
  const from = parseSquare(text.slice(0, 2));
  const to = parseSquare(text.slice(2, 4));
  if (from.file === to.file && from.rank === to.rank) return null;
  return { from, to, promotion: (text[4] as PromotionPiece | undefined) ?? null };
}

export function formatUci(move: UciMove): string {
  return squareName(move.from) + squareName(move.to) + (move.promotion ?? '');
}
