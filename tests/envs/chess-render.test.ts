// Every move image must carry exactly its action: decode rendered images from their pixels alone (green square,
// red square, promotion mark) for several hundred moves from random positions, at both sizes, before and after PNG.
import { describe, expect, it } from 'vitest';
import { Chess } from 'chess.js';
import { Rng } from '../../core/rng.ts';
import { decodePng, encodePng } from '../../core/image.ts';
import { decodeMoveImage } from '../../envs/chess/decode.ts';
import { boardLayout, COLORS, renderMove } from '../../envs/chess/render.ts';
import { chessEnv } from '../../envs/chess/index.ts';

// Positions where the special moves are legal: castling both ways for both sides, en passant for both sides,
// promotions (pushes and captures) for both sides.
const SPECIAL_POSITIONS = [
  'r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1',
  'r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1',
  'rnbqkbnr/ppp2ppp/4p3/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3',
  'rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2',
  '1n5k/P7/8/8/8/8/7p/K5N1 w - - 0 1',
  '1n5k/P7/8/8/8/8/7p/K5N1 b - - 0 1',
];

interface Sample {
  uci: string;
  kind: string;
}

function movesOf(chess: Chess): Sample[] {
  return chess.moves({ verbose: true }).map((m) => ({
    uci: m.from + m.to + (m.promotion ?? ''),
    kind:
      m.isKingsideCastle() || m.isQueensideCastle()
        ? 'castle'
        : m.isEnPassant()
          ? 'en passant'
          : m.promotion
            ? `promote ${m.promotion}`
            : 'other',
  }));
}

function sampleMoves(): Sample[] {
  const out: Sample[] = [];
  for (const fen of SPECIAL_POSITIONS) out.push(...movesOf(new Chess(fen)).filter((s) => s.kind !== 'other'));
  const rng = new Rng('chess-render-test');
  // Random positions: uniformly random play stopped at a random ply, then a few random legal moves of that position.
  while (out.length < 400) {
    const chess = new Chess();
    const plies = rng.int(50);
    let alive = true;
    for (let i = 0; i < plies && alive; i++) {
      const legal = chess.moves();
      alive = legal.length > 0;
      if (alive) chess.move(rng.pick(legal));
    }
    const moves = movesOf(chess);
    if (!alive || moves.length === 0) continue;
    for (const m of rng.sample(moves, 5)) out.push({ uci: m.uci, kind: m.kind === 'other' ? 'random' : m.kind });
  }
  return out;
}

const samples = sampleMoves();

describe('chess move images', () => {
  it('cover castling, en passant and all four promotions', () => {
    const kinds = new Set(samples.map((s) => s.kind));
    for (const k of ['castle', 'en passant', 'promote q', 'promote r', 'promote b', 'promote n'])
      expect(kinds).toContain(k);
    for (const uci of ['e1g1', 'e1c1', 'e8g8', 'e8c8', 'e5d6', 'e4d3', 'a7a8n', 'a7b8b', 'h2h1r', 'h2g1q']) {
      expect(samples.map((s) => s.uci)).toContain(uci);
    }
    expect(samples.length).toBeGreaterThanOrEqual(400);
  });

  for (const size of [chessEnv.imageSizes.model, chessEnv.imageSizes.chat]) {
    it(`decode back to exactly their move at ${size} px, raw and after PNG`, async () => {
      for (const { uci } of samples) {
        const image = renderMove(uci, size);
        expect(image.width).toBe(size);
        expect(image.data.length).toBe(size * size * 3);
        const decoded = decodeMoveImage(image);
        expect(decoded.uci).toBe(uci);
        if (boardLayout(size).labelled) expect(decoded.letter).toBe(decoded.promotion);
      }
      // PNG round-trip: every special move and a share of the random ones (encoding dominates the test's time).
      const pngSamples = size <= 64 ? samples : samples.filter((s, i) => s.kind !== 'random' || i % 8 === 0);
      for (const { uci } of pngSamples) {
        const back = await decodePng(await encodePng(renderMove(uci, size)));
        expect(decodeMoveImage(back).uci).toBe(uci);
      }
    });
  }

  it('decode at other sizes too (labels from 128 px, odd sizes centred)', () => {
    const special = samples.filter((s) => s.kind !== 'random');
    for (const size of [32, 100, 128, 200, 256, 777]) {
      for (const { uci } of special) expect(decodeMoveImage(renderMove(uci, size)).uci).toBe(uci);
    }
  });

  it('depend only on the move: same picture whatever the position, no pieces drawn', () => {
    const a = renderMove('e2e4', 64);
    const b = renderMove('e2e4', 64);
    expect(Buffer.from(a.data).equals(Buffer.from(b.data))).toBe(true);
    expect(a.data).not.toBe(b.data); // fresh buffers: callers may draw on them
    // Away from the two highlighted squares and the arrow, only board colours appear.
    const allowed = new Set([COLORS.light, COLORS.dark, COLORS.from, COLORS.to, COLORS.arrow].map((c) => c.join(',')));
    const seen = new Set<string>();
    for (let i = 0; i < a.data.length; i += 3) seen.add(`${a.data[i]},${a.data[i + 1]},${a.data[i + 2]}`);
    expect([...seen].filter((c) => !allowed.has(c))).toEqual([]);
  });

  it('distinguishes moves that differ only by the promotion piece or direction', () => {
    const images = ['a7a8q', 'a7a8r', 'a7a8b', 'a7a8n', 'a7a8', 'a8a7'].map((u) =>
      Buffer.from(renderMove(u, 64).data).toString('base64'),
    );
    expect(new Set(images).size).toBe(images.length);
  });

  it('rejects bad sizes and non-moves with clear errors', () => {
    expect(() => renderMove('e2e4', 16)).toThrow(/at least 32/);
    expect(() => renderMove('e9e4', 64)).toThrow(/not a UCI move/);
  });
});
