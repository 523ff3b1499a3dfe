import { describe, expect, it } from 'vitest';
import { parseChessAnswer, scoreChess } from '../../rewards/chess.ts';
import { finalAnswerResponse as gameStartResponse } from '../../rewards/final-answer.ts';
import { expandPlacement, isLegalBoard, parseFen, placementOf } from '../../rewards/fen.ts';

const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
const AFTER = 'rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2';
const AFTER_BOARD = AFTER.split(' ')[0];

// [description, response, expected parsed FEN text or null]
const cases: Array<[string, string, string | null]> = [
  ['plain marker', `FINAL ANSWER: ${AFTER}`, AFTER],
  ['lowercase marker', `final answer: ${AFTER}`, AFTER],
  ['no space after the colon', `FINAL ANSWER:${AFTER}`, AFTER],
  ['markdown bold marker and backticks', `**Final Answer:** \`${AFTER}\``, AFTER],
  ['quoted as in the paper', `FINAL ANSWER: "${AFTER}"`, AFTER],
  ['boxed', `Final answer: \\boxed{${AFTER}}`, AFTER],
  ['latex boxed in dollars', `Final answer: $\\boxed{${AFTER}}$`, AFTER],
  ['bracketed', `FINAL ANSWER: [${AFTER}]`, AFTER],
  ['trailing full stop', `FINAL ANSWER: ${AFTER}.`, AFTER],
  ['reasoning above the answer', `e2e4 moves the pawn.\nThen e7e5.\nFINAL ANSWER: ${AFTER}`, AFTER],
  [
    'trailing reasoning after the final-answer line',
    `FINAL ANSWER: ${AFTER}\nI moved both king pawns two squares.`,
    AFTER,
  ],
  [
    'last marker line wins, read bottom-up',
    `Final answer: ${START}\nWait, I forgot a move.\nFinal answer: ${AFTER}`,
    AFTER,
  ],
  [
    'ambiguous last line falls back to an earlier marker line',
    `Final answer: ${AFTER}\nFinal answer: ${START} or ${AFTER}`,
    AFTER,
  ],
  ['several candidate FENs on one line', `FINAL ANSWER: ${START} ${AFTER}`, null],
  ['FEN only in a code fence after the marker line', 'FINAL ANSWER:\n```\n' + AFTER + '\n```', null],
  ['FEN in a code fence on the marker line', 'FINAL ANSWER: ```' + AFTER + '```', AFTER],
  ['FEN without marker inside prose', `I think the board is ${AFTER} now.`, null],
  // The reference evaluator scores a response without the marker as invalid, even when it is just the FEN.
  ['bare FEN as the whole response', `  ${AFTER}  `, null],
  ['bare FEN in backticks', '`' + AFTER + '`', null],
  ['placement only', `FINAL ANSWER: ${AFTER_BOARD}`, AFTER_BOARD],
  ['placement with partial fields', `FINAL ANSWER: ${AFTER_BOARD} w KQkq`, `${AFTER_BOARD} w KQkq`],
  ['seven ranks', 'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p3/4P3/PPPP1PPP/RNBQKBNR w KQkq - 0 2', null],
  ['nine ranks', 'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p3/4P3/8/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2', null],
  ['rank of nine squares', 'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2', null],
  ['rank of seven squares', 'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p2/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2', null],
  ['adjacent digits', 'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p3/44/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2', null],
  ['bad piece letter', 'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4x3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2', null],
  ['echoed template', 'FINAL ANSWER: [FEN HERE]', null],
  ['empty', '', null],
  ['marker in the sentence, FEN after comma', `So the final answer is, ${AFTER}`, AFTER],
];

describe('parseChessAnswer', () => {
  for (const [name, response, expected] of cases) {
    it(name, () => {
      expect(parseChessAnswer(response)?.text ?? null).toBe(expected);
    });
  }

  it('accepts a bare FEN only with the explicit extension, and only as the whole response', () => {
    expect(parseChessAnswer(`  ${AFTER}  `, { acceptBareFen: true })?.text).toBe(AFTER);
    expect(parseChessAnswer('`' + AFTER + '`', { acceptBareFen: true })?.text).toBe(AFTER);
    expect(parseChessAnswer(`I think the board is ${AFTER} now.`, { acceptBareFen: true })).toBeNull();
    const bare = { target: AFTER, response: AFTER, initialState: START };
    expect(scoreChess(bare).valid).toBe(false);
    expect(scoreChess({ ...bare, meta: { answerParsing: 'bare-fen' } }).reward).toBe(1);
  });

  it('without requireMarker takes the lowest line holding exactly one FEN', () => {
    const response = `Start: ${START}\nEnd: ${AFTER}\nThat is all.`;
    expect(parseChessAnswer(response)).toBeNull();
    expect(parseChessAnswer(response, { requireMarker: false })?.text).toBe(AFTER);
  });
});

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

  it('scores a placement-only answer on the board but never as an exact FEN', () => {
    const s = scoreChess({ target: AFTER, response: `FINAL ANSWER: ${AFTER_BOARD}` });
    expect(s.reward).toBe(1);
    expect(s.metrics.exactBoard).toBe(true);
    expect(s.metrics.exactFen).toBe(false);
    expect(s.metrics.changedSquareAccuracy).toBeNull();
  });

  it('exact board but wrong side to move is not an exact FEN', () => {
    const s = scoreChess({ target: AFTER, response: `FINAL ANSWER: ${AFTER.replace(' w ', ' b ')}` });
    expect(s.metrics.exactBoard).toBe(true);
    expect(s.metrics.exactFen).toBe(false);
  });

  it('an invalid answer earns 0 and is flagged', () => {
    const s = scoreChess({ target: AFTER, response: 'I cannot tell.', initialState: START });
    expect(s).toEqual({
      reward: 0,
      valid: false,
      prediction: null,
      metrics: {
        perSquare: 0,
        exactFen: false,
        exactBoard: false,
        changedSquareAccuracy: 0,
        legalBoard: false,
        invalid: true,
      },
    });
  });

  it('changed-square accuracy is null when nothing changed', () => {
    const s = scoreChess({ target: START, response: START, initialState: START });
    expect(s.metrics.changedSquareAccuracy).toBeNull();
  });

  it('flags illegal boards', () => {
    const twoKings = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKKBNR w - - 0 1';
    expect(scoreChess({ target: START, response: twoKings }).metrics.legalBoard).toBe(false);
  });

  it('rejects a target that is not a FEN with a clear error', () => {
    expect(() => scoreChess({ target: 'nonsense', response: START })).toThrow(/target is not a valid FEN/);
  });
});

describe('fen helpers', () => {
  it('round-trips placements', () => {
    for (const fen of [START, AFTER, '8/8/8/3k4/8/8/8/4K3 w - - 0 1']) {
      const placement = fen.split(' ')[0];
      expect(placementOf(expandPlacement(placement)!)).toBe(placement);
    }
  });

  it('validates fields', () => {
    expect(parseFen(START)?.complete).toBe(true);
    expect(parseFen(`${AFTER_BOARD} x KQkq - 0 1`)).toBeNull();
    expect(parseFen(`${AFTER_BOARD} w KKq - 0 1`)).toBeNull();
    expect(parseFen(`${AFTER_BOARD} w KQkq e4 0 1`)).toBeNull();
    expect(parseFen(`${AFTER_BOARD} w KQkq e3 0 1 extra`)).toBeNull();
  });

  const legality: Array<[string, boolean]> = [
    [START.split(' ')[0], true],
    ['8/8/8/3k4/8/8/8/4K3', true],
    ['8/8/8/8/8/8/8/4K3', false], // no black king
    ['8/8/8/3kK3/8/8/8/8', false], // adjacent kings
    ['P7/8/8/3k4/8/8/8/4K3', false], // pawn on the last rank
    ['8/8/8/3k4/8/8/8/p3K3', false], // pawn on the first rank
    ['8/8/8/3k4/8/PPPPPPPP/P7/4K3', false], // nine white pawns
  ];
  for (const [placement, legal] of legality) {
    it(`legal board ${placement} → ${legal}`, () => expect(isLegalBoard(expandPlacement(placement)!)).toBe(legal));
  }
});
