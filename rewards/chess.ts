// The chess reward, by the MET-Bench harness's rules (metbench/scoring.py at 16f2bf30, on python-chess 1.11): parse
// the FEN a response commits to, and score it square by square against the target. Pure: no I/O, no Python.
//
// Parsing (the default, exactly the harness's): read the response's lines bottom-up (Python's line breaks: CR, LS and
// the others split too) and take the first line containing "final answer" (any case) on which exactly one run of six
// whitespace-separated tokens is a FEN python-chess accepts, once `\boxed{` and `\boxed` and the characters
// ` * [ ] ( ) { } ' " , ; : . are replaced by spaces. So a placement-only or five-field FEN, a FEN split over two
// lines, "x" for the side to move, "kqKQ", a trailing "!" or "$…$" around it are invalid (reward 0), and the six
// fields must follow python-chess's syntax (see rewards/fen.ts: "Q~", "+2" and "e4" as en passant square are fine).
// One extension only when asked for (`lenient`: the chess environment's `--chess-answer lenient`, recorded in every
// summary and run config): where the harness finds nothing, a FEN of one to five fields on a marker line counts
// (python-chess fills in the rest: w - - 0 1), and so does a response that is nothing but one FEN.
//
// Metrics, as the harness computes them: per-square accuracy (the reward; squares compared by piece letter), exact
// FEN (python-chess's normalised fen() of both), exact board (board_fen()), accuracy on the squares where the target
// differs from the initial state (the standard start without one; null when none changed), legal board
// (status() == STATUS_VALID, rewards/board-status.ts) and invalid. `harness` carries the row exactly as
// score_single_prediction_chess returns it.
import { UserError } from '../core/errors.ts';
import type { HarnessRow, Score, ScoreInput } from '../core/score.ts';
import { isLegalPosition } from './board-status.ts';
import type { Position } from './chess-position.ts';
import { boardFen, normalFen, parseFen, squareLetters, STARTING_FEN } from './fen.ts';
import { pySplit, pySplitlines, pyStrip } from './python-str.ts';

export interface ChessParseOptions {
  /** The opt-in extension (default false): short FENs on a marker line, and a response that is only a FEN. */
  lenient?: boolean;
}

/** Episode meta `answerParsing` values that turn the extension on ('bare-fen' is its name in older datasets). */
export const LENIENT_PARSING = 'lenient';
const LENIENT_VALUES = new Set([LENIENT_PARSING, 'bare-fen']);

/** Does an episode's meta ask for the lenient parsing? */
export const asksLenient = (meta: Record<string, unknown> | undefined): boolean =>
  typeof meta?.answerParsing === 'string' && LENIENT_VALUES.has(meta.answerParsing);

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

/** _clean_chess_response_text: `\boxed{`, `\boxed` and each of ` * [ ] ( ) { } ' " , ; : . become a space. */
const cleanLine = (line: string): string =>
  line
    .replaceAll('\\boxed{', ' ')
    .replaceAll('\\boxed', ' ')
    .replace(/[`*[\](){}'",;:.]/g, ' ');

/** _valid_chess_fens: every run of six consecutive tokens of the cleaned line that Board(fen) accepts. */
function sixTokenFens(tokens: string[]): string[] {
  const found: string[] = [];
  for (let i = 0; i + 6 <= tokens.length; i++) {
    const candidate = tokens.slice(i, i + 6).join(' ');
    if (parseFen(candidate)) found.push(candidate);
  }
  return found;
}

/** The extension: at each token, the longest run of one to six tokens that Board(fen) accepts. */
function shortFens(tokens: string[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    for (let k = Math.min(6, tokens.length - i); k >= 1; k--) {
      const candidate = tokens.slice(i, i + k).join(' ');
      if (parseFen(candidate)) {
        found.push(candidate);
        i += k - 1;
        break;
      }
    }
  }
  return found;
}

function fromMarkerLines(lines: string[], fens: (tokens: string[]) => string[]): Position | null {
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].toLowerCase().includes(MARKER)) continue;
    const candidates = fens(pySplit(cleanLine(lines[i])));
    if (candidates.length === 1) return parseFen(candidates[0]);
  }
  return null;
}

/** The position a response commits to, or null when it commits to none (or to two on its answer line). */
export function parseChessAnswer(response: string, options: ChessParseOptions = {}): Position | null {
  const lines = pySplitlines(response);
  const reference = fromMarkerLines(lines, sixTokenFens);
  if (reference || !options.lenient) return reference;
  const short = fromMarkerLines(lines, shortFens);
  if (short) return short;
  const whole = pySplit(cleanLine(lines.join(' ')));
  return whole.length >= 1 && whole.length <= 6 ? parseFen(whole.join(' ')) : null;
}

/** parse_chess_fen_gt: the first line, stripped, without backticks and asterisks, as Board(fen) reads it. */
function truth(text: string, what: string): Position {
  const position = parseFen(pyStrip(text).split('\n')[0].replace(/[`*]/g, ''));
  if (!position) throw new UserError(`${what} is not a valid FEN: ${JSON.stringify(text)}`);
  return position;
}

/** score_single_prediction_chess: the harness's row and metrl's metrics for one parsed prediction. */
function chessScore(prediction: Position | null, target: Position, initial: Position): Score {
  const want = squareLetters(target);
  const start = squareLetters(initial);
  const changed = want.flatMap((c, i) => (c !== start[i] ? [i] : []));
  const got = prediction ? squareLetters(prediction) : null;
  const successes = got ? want.filter((c, i) => got[i] === c).length : 0;
  const changedRight = got ? changed.filter((i) => got[i] === want[i]).length : 0;
  const exactFen = prediction !== null && normalFen(prediction) === normalFen(target);
  const exactBoard = prediction !== null && boardFen(prediction) === boardFen(target);
  const legal = prediction !== null && isLegalPosition(prediction);
  const harness: HarnessRow = {
    invalid_pred: prediction ? 0 : 1,
    successes,
    trials: 64,
    exact_match: Number(exactFen),
    exact_board_match: Number(exactBoard),
    exact_match_trials: 1,
    legal_board: Number(legal),
    changed_sq_successes: changedRight,
    changed_sq_trials: changed.length,
    changed_successes: changedRight,
    changed_trials: changed.length,
  };
  const metrics: ChessMetrics = {
    perSquare: successes / 64,
    exactFen,
    exactBoard,
    changedSquareAccuracy: changed.length > 0 ? changedRight / changed.length : null,
    legalBoard: legal,
    invalid: prediction === null,
  };
  return {
    reward: metrics.perSquare,
    valid: prediction !== null,
    prediction: prediction ? normalFen(prediction) : null,
    metrics,
    harness,
  };
}

/**
 * Score one response: the reward is the per-square accuracy, 0 when the answer is invalid. Without an initial state
 * the changed squares are counted from the standard start, as the harness does; the episode's meta
 * `answerParsing: 'lenient'` turns the extension on.
 */
export function scoreChess(input: ScoreInput, options: ChessParseOptions = {}): Score {
  const target = truth(input.target, 'target');
  const initial =
    input.initialState === undefined ? truth(STARTING_FEN, 'start') : truth(input.initialState, 'initial_state');
  const lenient = options.lenient ?? asksLenient(input.meta);
  return chessScore(parseChessAnswer(input.response, { lenient }), target, initial);
}
