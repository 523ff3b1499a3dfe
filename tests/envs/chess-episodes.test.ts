// Chess episodes: windows of real or synthetic games whose target is the position after the moves, deterministic
// from the seed, drawn without replacement from a file, and split disjointly by the shared generator.
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { Chess, DEFAULT_POSITION } from 'chess.js';
import { BLACK, Board, squareIndex } from '../../envs/chess/board.ts';
import { playSyntheticMove } from '../../envs/chess/synthetic.ts';
import { Rng } from '../../core/rng.ts';
import { SHARED_DIR } from '../../core/paths.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { chessEnv } from '../../envs/chess/index.ts';
import { readGamesFile } from '../../envs/chess/games.ts';
import { getEnv } from '../../envs/registry.ts';
import { scoreChess } from '../../rewards/chess.ts';
import { finalAnswerResponse as gameStartResponse } from '../../rewards/final-answer.ts';
import type { Candidate } from '../../envs/env.ts';

const SAMPLE = join(SHARED_DIR, 'data', 'millionbase-sample.uci');

function take(iterable: Iterable<Candidate>, n: number): Candidate[] {
  const out: Candidate[] = [];
  for (const c of iterable) {
    out.push(c);
    if (out.length >= n) break;
  }
  return out;
}

/** Replaying the moves from the initial state with chess.js must give the target. */
function replay(c: Candidate): string {
  const chess = new Chess(c.initialState);
  for (const m of c.actionTexts) chess.move({ from: m.slice(0, 2), to: m.slice(2, 4), promotion: m[4] });
  return chess.fen();
}

describe('chess candidates', () => {
  it('synthetic: start position, T legal moves, target after them; deterministic per seed', () => {
    const a = take(chessEnv.candidates(new Rng(5), { actions: 10, extra: {} }), 20);
    const b = take(chessEnv.candidates(new Rng(5), { actions: 10, extra: {} }), 20);
    const c = take(chessEnv.candidates(new Rng(6), { actions: 10, extra: {} }), 20);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    for (const cand of a) {
      expect(cand.initialState).toBe(DEFAULT_POSITION);
      expect(cand.actionTexts).toHaveLength(10);
      expect(replay(cand)).toBe(cand.target);
      expect(cand.meta).toMatchObject({ source: 'synthetic', ply: 0 });
    }
    expect(new Set(a.map((x) => x.actionTexts.join(' '))).size).toBe(a.length); // no repeats
  });

  it('synthetic with a random offset starts at varied plies', () => {
    const cands = take(chessEnv.candidates(new Rng(1), { actions: 5, extra: { offset: 'random' } }), 15);
    const plies = cands.map((c) => c.meta?.ply as number);
    expect(new Set(plies).size).toBeGreaterThan(5);
    for (const c of cands) expect(replay(c)).toBe(c.target);
  });

  it('synthetic play takes free material and saves attacked pieces (a random mover would not)', () => {
    // White to move; the black queen on h4 hangs to the knight on f3.
    const hanging = 'rnb1kbnr/pppp1ppp/8/4p3/4P2q/5N2/PPPP1PPP/RNBQKB1R w KQkq - 0 1';
    // White to move; the white queen on d4 is attacked by the pawn on e5 and should move away.
    const attacked = 'rnbqkbnr/pppp1ppp/8/4p3/3Q4/8/PPP1PPPP/RNB1KBNR w KQkq - 0 1';
    let took = 0;
    let saved = 0;
    for (let seed = 0; seed < 20; seed++) {
      const a = Board.fromFen(hanging);
      if (playSyntheticMove(a, new Rng(seed), 10) === 'f3h4') took++;
      const b = Board.fromFen(attacked);
      const move = playSyntheticMove(b, new Rng(seed), 10)!;
      if (move.startsWith('d4') && !b.isAttacked(squareIndex(move.slice(2, 4)), BLACK)) saved++;
    }
    expect(took).toBeGreaterThanOrEqual(18);
    expect(saved).toBeGreaterThanOrEqual(18);
  });

  it('from a file: each game at most once, the window at the recorded ply, too-short games skipped', () => {
    const games = readGamesFile(SAMPLE);
    const all = [...chessEnv.candidates(new Rng(3), { actions: 10, extra: { games: SAMPLE, offset: 'random' } })];
    expect(all.length).toBe(games.filter((g) => g.moves.length >= 10).length);
    const indices = all.map((c) => c.meta?.game as number);
    expect(new Set(indices).size).toBe(all.length);
    for (const c of all) {
      const game = games[(c.meta?.game as number) - 1];
      const ply = c.meta?.ply as number;
      expect(c.actionTexts).toEqual(game.moves.slice(ply, ply + 10));
      expect(replay(c)).toBe(c.target);
      // The initial state (reached from a stored checkpoint) is the position after `ply` moves from the start.
      expect(c.initialState).toBe(
        replay({ initialState: game.startFen, actionTexts: game.moves.slice(0, ply), target: '' }),
      );
    }
    const longest = Math.max(...games.map((g) => g.moves.length));
    expect([...chessEnv.candidates(new Rng(3), { actions: longest + 1, extra: { games: SAMPLE } })]).toHaveLength(0);
  });

  it('from a file with the default offset: the game start, as in the paper', () => {
    const [first] = take(chessEnv.candidates(new Rng(3), { actions: 4, extra: { games: SAMPLE } }), 1);
    expect(first.initialState).toBe(DEFAULT_POSITION);
    expect(first.meta).toMatchObject({ source: 'file', ply: 0 });
  });

  it('starts from a PGN FEN header', () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-chess-ep-'));
    const path = join(dir, 'g.pgn');
    writeFileSync(path, '[SetUp "1"]\n[FEN "4k3/P7/8/8/8/8/8/4K3 w - - 0 1"]\n\n1. a8=N Kd7 2. Nb6+ *\n');
    const [c] = [...chessEnv.candidates(new Rng(1), { actions: 3, extra: { games: path } })];
    expect(c.initialState).toBe('4k3/P7/8/8/8/8/8/4K3 w - - 0 1');
    expect(c.actionTexts).toEqual(['a7a8n', 'e8d7', 'a8b6']);
  });

  it('rejects bad options with UserErrors', () => {
    expect(() => chessEnv.candidates(new Rng(1), { actions: -1, extra: {} })).toThrow(/non-negative/);
    expect(() => chessEnv.candidates(new Rng(1), { actions: 3, extra: { offset: 'middle' } })).toThrow(/offset/);
    expect(() => chessEnv.candidates(new Rng(1), { actions: 3, extra: { games: '/no/such/file.pgn' } })).toThrow(
      /no such games file/,
    );
  });
});

describe('chess episodes through the shared generator', () => {
  it('is registered', async () => {
    expect((await getEnv('chess')).domain).toBe('chess');
  });

  it('train and test are disjoint and deterministic', () => {
    const options = { n: 20, actions: 5, seed: 11, modality: 'mixed' as const, imageRatio: 0.5 };
    const train = generateEpisodes(chessEnv, { ...options, split: 'train' });
    const test = generateEpisodes(chessEnv, { ...options, split: 'test' });
    const key = (e: { initialState: string; actions: { text: string }[] }) =>
      e.initialState + e.actions.map((a) => a.text).join(' ');
    const trainKeys = new Set(train.map(key));
    expect(test.some((e) => trainKeys.has(key(e)))).toBe(false);
    expect(generateEpisodes(chessEnv, { ...options, split: 'test' })).toEqual(test);
    const modalities = test.flatMap((e) => e.actions.map((a) => a.modality));
    expect(modalities).toContain('image');
    expect(modalities).toContain('text');
  });

  it('reports when the games file runs out', () => {
    expect(() =>
      generateEpisodes(chessEnv, {
        n: 100,
        actions: 10,
        seed: 1,
        split: 'test',
        modality: 'text',
        extra: { games: SAMPLE },
      }),
    ).toThrow(/could only make \d+ of 100 test episodes/);
  });

  it('the game-start baseline scores well below 1 after 10 real moves', () => {
    const eps = generateEpisodes(chessEnv, {
      n: 25,
      actions: 10,
      seed: 2,
      split: 'train',
      modality: 'text',
      extra: { games: SAMPLE },
    });
    const rewards = eps.map(
      (e) =>
        scoreChess({ target: e.target, response: gameStartResponse(e.initialState), initialState: e.initialState })
          .reward,
    );
    const mean = rewards.reduce((s, r) => s + r, 0) / rewards.length;
    // The paper reports 74.9% for this baseline on Millionbase after 10 moves.
    expect(mean).toBeGreaterThan(0.65);
    expect(mean).toBeLessThan(0.85);
  });
});
