// A chess answer made visible: the predicted board beside the target, square by square, with the squares it gets
// wrong marked. The per-square reward is the share of the 64 squares that match (rewards/chess.ts); this is the
// same comparison, kept per square for the page.
import { expandPlacement } from '../../rewards/placement.ts';

export interface BoardDiff {
  /** 64 squares, a8 first (the order a FEN lists them): a piece letter or '.' for empty; null when unparsed. */
  predicted: string[] | null;
  target: string[];
  /** Squares where the prediction differs from the target (all of them when there is no prediction). */
  wrong: boolean[];
  /** Matching squares out of 64: the per-square reward of a valid answer. */
  right: number;
}

/** The board of a FEN or bare placement, or null when it is not one. */
function boardOf(fen: string | null): string[] | null {
  if (fen === null) return null;
  const placement = fen.trim().split(/\s+/)[0] ?? '';
  return expandPlacement(placement);
}

export function boardDiff(prediction: string | null, target: string): BoardDiff | null {
  const want = boardOf(target);
  if (!want) return null;
  const got = boardOf(prediction);
  const wrong = want.map((sq, i) => got === null || got[i] !== sq);
  return { predicted: got, target: want, wrong, right: wrong.filter((w) => !w).length };
}
