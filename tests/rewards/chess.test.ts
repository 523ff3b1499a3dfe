// The chess reward: its metrics on hand-worked positions, the lenient opt-in, and the python-chess rules it stands on
// (Board(fen) syntax, the normalised fen(), status()) against python-chess 1.11's own verdicts on 853 FENs: random
// games with forced en passant squares and mutated fields, positions right after a double push with and without a
// legal capture (pins, checks, the rank skewer), and every status flag (tests/fixtures/metbench-harness/
// python-chess-verdicts.jsonl, written by python-chess). Parsing case by case is in metbench-harness.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseChessAnswer, scoreChess } from '../../rewards/chess.ts';
import { finalAnswerResponse as gameStartResponse } from '../../rewards/final-answer.ts';
import { boardFen, normalFen, parseFen } from '../../rewards/fen.ts';
import { isLegalPosition, statusProblems } from '../../rewards/board-status.ts';
import { expandPlacement, placementOf } from '../../rewards/placement.ts';

const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
const AFTER = 'rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2';
const AFTER_BOARD = AFTER.split(' ')[0];

describe('scoreChess', () => {
  it('gives full reward and exact matches for the correct answer', () => {
    const s = scoreChess({ target: AFTER, response: `FINAL ANSWER: ${AFTER}`, initialState: START });
    expect(s.reward).toBe(1);
    expect(s.valid).toBe(true);
    expect(s.metrics).toEqual({
      perSquare: 1,
      exactFen: true,
      exactBoard: true,
      changedSquareAccuracy: 1,
      legalBoard: true,
      invalid: false,
    });
    expect(s.harness).toEqual({
      invalid_pred: 0,
      successes: 64,
      trials: 64,
      exact_match: 1,
      exact_board_match: 1,
      exact_match_trials: 1,
      legal_board: 1,
      changed_sq_successes: 4,
      changed_sq_trials: 4,
      changed_successes: 4,
      changed_trials: 4,
    });
  });

  it('scores the game-start baseline by squares: 4 of 64 differ after e4 e5', () => {
    const s = scoreChess({ target: AFTER, response: gameStartResponse(START), initialState: START });
    expect(s.reward).toBeCloseTo(60 / 64);
    expect(s.metrics.exactBoard).toBe(false);
    expect(s.metrics.changedSquareAccuracy).toBe(0);
  });

  it('counts half of the changed squares when only white moved', () => {
    const whiteOnly = 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1';
    const s = scoreChess({ target: AFTER, response: `FINAL ANSWER: ${whiteOnly}`, initialState: START });
    expect(s.reward).toBeCloseTo(62 / 64);
    expect(s.metrics.changedSquareAccuracy).toBeCloseTo(0.5);
    expect(s.metrics.exactFen).toBe(false);
  });

  it('exact FEN compares the normalised FENs: an en passant square no pawn can take is no difference', () => {
    const target = 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1';
    const s = scoreChess({ target, response: `FINAL ANSWER: ${target.replace(' - ', ' e3 ')}`, initialState: START });
    expect(s.metrics.exactFen).toBe(true);
    expect(s.prediction).toBe(target);
  });

  it('exact board but wrong side to move is not an exact FEN', () => {
    const s = scoreChess({ target: AFTER, response: `FINAL ANSWER: ${AFTER.replace(' w ', ' b ')}` });
    expect(s.metrics.exactBoard).toBe(true);
    expect(s.metrics.exactFen).toBe(false);
  });

  it('an invalid answer earns 0 and is flagged; a placement alone is invalid', () => {
    for (const response of ['I cannot tell.', `FINAL ANSWER: ${AFTER_BOARD}`]) {
      const s = scoreChess({ target: AFTER, response, initialState: START });
      expect(s).toMatchObject({ reward: 0, valid: false, prediction: null });
      expect(s.metrics).toEqual({
        perSquare: 0,
        exactFen: false,
        exactBoard: false,
        changedSquareAccuracy: 0,
        legalBoard: false,
        invalid: true,
      });
      expect(s.harness).toMatchObject({ invalid_pred: 1, successes: 0, changed_sq_trials: 4 });
    }
  });

  it('without an initial state the changed squares are counted from the standard start (as the harness does)', () => {
    const s = scoreChess({ target: AFTER, response: `FINAL ANSWER: ${AFTER}` });
    expect(s.harness?.changed_sq_trials).toBe(4);
    expect(scoreChess({ target: START, response: START }).metrics.changedSquareAccuracy).toBeNull();
  });

  it('legal board is python-chess status(): castling rights, en passant and the side not to move count', () => {
    const legal = (fen: string) => scoreChess({ target: START, response: `FINAL ANSWER: ${fen}` }).metrics.legalBoard;
    expect(legal(START)).toBe(true);
    expect(legal('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKKBNR w - - 0 1')).toBe(false); // two white kings
    expect(legal('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w kq - 0 1')).toBe(false); // no white king
    expect(legal('4k3/8/8/8/8/8/8/4R1K1 w - - 0 1')).toBe(false); // black, not to move, is in check
    expect(legal('4k3/8/8/8/8/8/8/4K2R w Q - 0 1')).toBe(false); // a castling right without its rook
    expect(legal('4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1')).toBe(true);
    expect(legal('4k3/8/8/8/4P3/8/8/4K3 w - e3 0 1')).toBe(false); // en passant square with the wrong side to move
  });

  it('rejects a target that is not a FEN with a clear error', () => {
    expect(() => scoreChess({ target: 'nonsense', response: START })).toThrow(/target is not a valid FEN/);
    expect(() => scoreChess({ target: START, response: START, initialState: '' })).toThrow(/initial_state/);
  });
});

describe('the lenient opt-in', () => {
  const bare = { target: AFTER, response: AFTER, initialState: START };

  it('is off by default: the harness accepts neither a bare FEN nor a placement', () => {
    expect(scoreChess(bare).valid).toBe(false);
    expect(scoreChess({ ...bare, response: `FINAL ANSWER: ${AFTER_BOARD}` }).valid).toBe(false);
  });

  it('accepts a response that is only a FEN, and shorter FENs on a marker line (the rest as python-chess fills it)', () => {
    const lenient = { meta: { answerParsing: 'lenient' } };
    expect(scoreChess({ ...bare, ...lenient }).reward).toBe(1);
    expect(scoreChess({ ...bare, response: '`' + AFTER + '`', ...lenient }).reward).toBe(1);
    const placement = scoreChess({ ...bare, response: `FINAL ANSWER: ${AFTER_BOARD}`, ...lenient });
    expect(placement).toMatchObject({ reward: 1, valid: true, prediction: `${AFTER_BOARD} w - - 0 1` });
    expect(placement.metrics.exactFen).toBe(false);
    // the old name of the option, in datasets written before, still means it
    expect(scoreChess({ ...bare, meta: { answerParsing: 'bare-fen' } }).reward).toBe(1);
  });

  it('never changes what the reference accepts, and still refuses prose and two FENs', () => {
    const both = `FINAL ANSWER: ${AFTER} (${AFTER_BOARD})`;
    expect(normalFen(parseChessAnswer(both, { lenient: true })!)).toBe(normalFen(parseChessAnswer(both)!));
    expect(parseChessAnswer(`I think the board is ${AFTER} now.`, { lenient: true })).toBeNull();
    expect(parseChessAnswer(`FINAL ANSWER: ${AFTER_BOARD} or ${START.split(' ')[0]}`, { lenient: true })).toBeNull();
  });
});

describe('python-chess rules against python-chess', () => {
  const verdicts = readFileSync(
    join(import.meta.dirname, '..', 'fixtures', 'metbench-harness', 'python-chess-verdicts.jsonl'),
    'utf8',
  )
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { fen: string; error?: true; fen_out?: string; board_fen?: string; valid?: boolean });

  it(`Board(fen) accepts and refuses, fen(), board_fen() and status() as python-chess does (${verdicts.length} FENs)`, () => {
    const wrong: string[] = [];
    for (const v of verdicts) {
      const p = parseFen(v.fen);
      const got = p ? { fen_out: normalFen(p), board_fen: boardFen(p), valid: isLegalPosition(p) } : { error: true };
      const want = v.error ? { error: true } : { fen_out: v.fen_out, board_fen: v.board_fen, valid: v.valid };
      if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`${v.fen}: ${JSON.stringify(got)}`);
    }
    expect(wrong).toEqual([]);
    // the set exercises both answers of every rule it is meant to
    expect(verdicts.filter((v) => v.error).length).toBeGreaterThan(100);
    expect(verdicts.filter((v) => v.valid === false).length).toBeGreaterThan(200);
    expect(verdicts.filter((v) => v.fen_out && v.fen_out.split(' ')[3] !== '-').length).toBeGreaterThan(100);
  });

  it('names what status() would flag', () => {
    expect(statusProblems(parseFen('8/8/8/8/8/8/8/8 w - - 0 1')!)).toEqual(['EMPTY', 'NO_WHITE_KING', 'NO_BLACK_KING']);
    expect(statusProblems(parseFen('4k3/8/8/8/8/8/8/R3K3 b Q - 0 1')!)).toEqual([]);
  });
});

describe('placement helpers', () => {
  it('round-trip placements', () => {
    for (const fen of [START, AFTER, '8/8/8/3k4/8/8/8/4K3 w - - 0 1']) {
      const placement = fen.split(' ')[0];
      expect(placementOf(expandPlacement(placement)!)).toBe(placement);
    }
    expect(expandPlacement('8/8/8/8/44/8/8/8')).toBeNull();
  });
});
