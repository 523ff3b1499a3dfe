// The synthetic player's fast board must agree with chess.js: perft counts on standard test positions, and identical
// legal moves and FENs along random games (including chess.js's en passant rule in FENs).
import { describe, expect, it } from 'vitest';
import { Chess } from 'chess.js';
import { Rng } from '../../core/rng.ts';
import { Board, moveToUci } from '../../envs/chess/board.ts';

function perft(board: Board, depth: number): number {
  if (depth === 0) return 1;
  const moves = board.legalMoves();
  if (depth === 1) return moves.length;
  let n = 0;
  for (const m of moves) {
    board.make(m);
    n += perft(board, depth - 1);
    board.unmake();
  }
  return n;
}

// Published perft counts (chessprogramming.org "Perft Results").
const PERFT: Array<[string, number[]]> = [
  ['rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1', [20, 400, 8902]],
  ['r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1', [48, 2039, 97862]],
  ['8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1', [14, 191, 2812, 43238]],
  ['r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1', [6, 264, 9467]],
  ['rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8', [44, 1486, 62379]],
];

describe('fast chess board', () => {
  for (const [fen, counts] of PERFT) {
    it(`perft ${fen}`, () => {
      const board = Board.fromFen(fen);
      counts.forEach((count, i) => expect(perft(board, i + 1)).toBe(count));
      expect(board.fen()).toBe(fen); // make/unmake restored everything
    });
  }

  it('agrees with chess.js on legal moves and FENs along random games', () => {
    const rng = new Rng('board-vs-chess.js');
    let plies = 0;
    let epFens = 0;
    let fullComparisons = 0;
    for (let game = 0; game < 16; game++) {
      const board = Board.fromFen('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1');
      const reference = new Chess();
      for (let ply = 0; ply < 90; ply++) {
        const ours = board.legalMoves();
        // chess.js's verbose move list is slow (it builds FENs per move): compare the count at every ply and the
        // full list every 6th ply, and every other ply when a special move (castling, en passant, promotion) is legal.
        const special = ours.some((m) => m.flags & 6 || m.promotion);
        if ((special && ply % 2 === 0) || ply % 6 === 0) {
          const theirs = reference.moves({ verbose: true }).map((m) => m.from + m.to + (m.promotion ?? ''));
          expect(ours.map(moveToUci).sort()).toEqual(theirs.sort());
          fullComparisons++;
        } else {
          expect(ours.length).toBe(reference.moves().length);
        }
        if (ours.length === 0) break;
        // Prefer pawn double pushes now and then, so en passant chances come up often.
        const doubles = ours.filter((m) => Math.abs(m.to - m.from) === 32 && (m.piece & 7) === 1);
        const move = doubles.length > 0 && rng.bool(0.3) ? rng.pick(doubles) : rng.pick(ours);
        board.make(move);
        reference.move({
          from: moveToUci(move).slice(0, 2),
          to: moveToUci(move).slice(2, 4),
          promotion: moveToUci(move)[4],
        });
        expect(board.fen()).toBe(reference.fen());
        if (board.fen().split(' ')[3] !== '-') epFens++;
        plies++;
      }
    }
    expect(plies).toBeGreaterThan(800);
    expect(fullComparisons).toBeGreaterThan(150);
    expect(epFens).toBeGreaterThan(0);
  });
});
