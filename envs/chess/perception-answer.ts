// Reading a perception probe's answer as a chess move: the probe asks for the one move an image shows, and only a
// well-formed UCI move counts (a promotion keeps its piece, so "a7a8" is a different answer from "a7a8q").
import { UCI_PATTERN } from './uci.ts';

/** The UCI move a cleaned answer names, or null when it is not exactly one. */
export function readChessMove(cleaned: string): string | null {
  return UCI_PATTERN.test(cleaned) ? cleaned : null;
}
