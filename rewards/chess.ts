// The chess reward: parse a model's response into a FEN the way the MET-Bench reference evaluator does, and score it
// against the target board. Pure: no I/O, no chess engine.
//
// Parsing (reference behaviour): read the response's lines from the bottom up and take the first line that contains
// "final answer" (any case) and holds exactly one valid FEN once backticks, asterisks, brackets, quotes, commas and
// `\boxed{…}` wrappers are removed (we also remove `$`, which wraps `\boxed` in LaTeX answers, and trailing sentence
// punctuation on each token). A line with two FENs is ambiguous and does not count; a FEN on the line *after* the
// marker does not count either. If no line qualifies the answer is invalid and earns 0.
// That is the default, exactly, so that metrl's numbers compare with MET-Bench's. One extension is available only when
// asked for (`acceptBareFen`, the chess environment's `--chess-answer bare-fen`, recorded in every summary): a
// response that is, as a whole, exactly one valid FEN (after the same clean-up) is accepted without the marker.
// `parseChessAnswer(response, { requireMarker: false })` goes further and takes the lowest line holding exactly one FEN.
//
// Metrics: per-square accuracy (the reward), exact FEN (all six fields, only possible for a complete FEN), exact board
// (placement), accuracy on the squares that differ between the initial and target boards (null without an initial
// state or when no square changed), legal board (rewards/fen.ts isLegalBoard), invalid. A placement-only FEN is valid
// and scored on its board; it can never be an exact FEN.
import { UserError } from '../core/errors.ts';
import type { Score, ScoreInput } from '../core/score.ts';
import { expandPlacement, fenFromParts, isFenField, isLegalBoard, parseFen, type Fen } from './fen.ts';

export interface ChessParseOptions {
  /** Reference behaviour (default true): a FEN counts only on a "final answer" line. */
  requireMarker?: boolean;
  /** The extension (default false): a response that is nothing but one valid FEN counts too. */
  acceptBareFen?: boolean;
}

/** Episode meta value that turns the bare-FEN extension on for scoring (set by `--chess-answer bare-fen`). */
export const BARE_FEN_PARSING = 'bare-fen';

interface ChessMetrics {
  [name: string]: number | boolean | null;
  perSquare: number;
  exactFen: boolean;
  exactBoard: boolean;
  changedSquareAccuracy: number | null;
  legalBoard: boolean;
  invalid: boolean;
}

const MARKER = 'final answer';

/** Remove the decorations models wrap answers in; each becomes a space so that tokens stay apart. */
function cleanAnswerLine(line: string): string {
  return line
    .replace(/\\boxed\s*\{([^{}]*)\}/g, ' $1 ')
    .replace(/\\boxed/g, ' ')
    .replace(/[`*[\]{}()"'“”‘’,$]/g, ' ');
}

/** All valid FENs on one (cleaned) line: each placement token plus the well-formed fields that directly follow it. */
function fensInLine(cleaned: string): Fen[] {
  const tokens = cleaned
    .split(/[\s:]+/) // a colon never occurs in a FEN: "ANSWER:rnbqkbnr/…" still yields the placement
    .map((t) => t.replace(/[.;:!?]+$/, ''))
    .filter((t) => t !== '');
  const found: Fen[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (!expandPlacement(tokens[i])) continue;
    const fields: string[] = [];
    while (
      fields.length < 5 &&
      i + 1 + fields.length < tokens.length &&
      isFenField(tokens[i + 1 + fields.length], fields.length)
    ) {
      fields.push(tokens[i + 1 + fields.length]);
    }
    const fen = fenFromParts(tokens[i], fields);
    if (fen) found.push(fen);
    i += fields.length;
  }
  return found;
}

/** The FEN a response commits to, or null when there is none or it is ambiguous. */
export function parseChessAnswer(response: string, options: ChessParseOptions = {}): Fen | null {
  const requireMarker = options.requireMarker ?? true;
  const lines = response.split(/\r?\n/).map(cleanAnswerLine);
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].toLowerCase().includes(MARKER)) continue;
    const fens = fensInLine(lines[i]);
    if (fens.length === 1) return fens[0];
  }
  if (options.acceptBareFen || !requireMarker) {
    const whole = fensInLine(lines.join(' '));
    const nonFenText = lines.join(' ').trim().replace(/\s+/g, ' ');
    if (whole.length === 1 && stripTrailing(nonFenText) === whole[0].text) return whole[0];
  }
  if (!requireMarker) {
    for (let i = lines.length - 1; i >= 0; i--) {
      const fens = fensInLine(lines[i]);
      if (fens.length === 1) return fens[0];
    }
  }
  return null;
}

function stripTrailing(text: string): string {
  return text
    .split(' ')
    .map((t) => t.replace(/[.;:!?]+$/, ''))
    .filter((t) => t !== '')
    .join(' ');
}

function requireFen(text: string, what: string): Fen {
  const fen = parseFen(text);
  if (!fen) throw new UserError(`${what} is not a valid FEN: ${JSON.stringify(text)}`);
  return fen;
}

/** Metrics of a parsed prediction (or null for an invalid answer) against the target. */
function chessMetrics(prediction: Fen | null, target: Fen, initial: Fen | null): ChessMetrics {
  const changed = initial ? target.board.map((c, i) => c !== initial.board[i]) : null;
  const changedCount = changed ? changed.filter(Boolean).length : 0;
  if (!prediction) {
    return {
      perSquare: 0,
      exactFen: false,
      exactBoard: false,
      changedSquareAccuracy: changed && changedCount > 0 ? 0 : null,
      legalBoard: false,
      invalid: true,
    };
  }
  let same = 0;
  let sameChanged = 0;
  for (let i = 0; i < 64; i++) {
    if (prediction.board[i] !== target.board[i]) continue;
    same++;
    if (changed?.[i]) sameChanged++;
  }
  return {
    perSquare: same / 64,
    exactFen: prediction.complete && prediction.text === target.text,
    exactBoard: prediction.placement === target.placement || same === 64,
    changedSquareAccuracy: changed && changedCount > 0 ? sameChanged / changedCount : null,
    legalBoard: isLegalBoard(prediction.board),
    invalid: false,
  };
}

/** Score one response. The reward is the per-square accuracy; 0 when the answer is invalid. */
/** Score a response; the episode's meta `answerParsing: 'bare-fen'` turns the bare-FEN extension on. */
export function scoreChess(input: ScoreInput, options: ChessParseOptions = {}): Score {
  const target = requireFen(input.target, 'target');
  const initial =
    input.initialState !== undefined && input.initialState !== ''
      ? requireFen(input.initialState, 'initial_state')
      : null;
  const acceptBareFen = options.acceptBareFen ?? input.meta?.answerParsing === BARE_FEN_PARSING;
  const prediction = parseChessAnswer(input.response, { ...options, acceptBareFen });
  const metrics = chessMetrics(prediction, target, initial);
  return { reward: metrics.perSquare, valid: prediction !== null, prediction: prediction?.text ?? null, metrics };
}
