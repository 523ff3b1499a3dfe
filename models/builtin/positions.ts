// RoPE positions of a token sequence. Two schemes, recorded in the architecture (config.json `positions`):
// - sequence: token i sits at position i (the usual one; checkpoints from before the grid default to it).
// - grid: a token sits at row × ROW_STRIDE + column, the row counting lines and the column characters within a line
//   (an image's patch tokens are columns too). After the trace cue's line (`trace`), rows start again at
//   TRACE_FIRST_ROW, so that trace line i gets the positions of the prompt's line for action i, and the trace's
//   line 0 (`start -> <state 0>`) those of the initial state.
// Why the grid: a trace line has to copy its action from the prompt's list. With sequence positions the model has to
// find action i by matching its label, an induction circuit the small model did not form in hundreds of steps (it
// estimated the line from the label's rank and copied a neighbour). On the grid the action's characters sit at a
// fixed relative position (same row, next column) from the character being written, which one attention head with
// rotary embeddings can find directly; the previous line's state is at a fixed distance too (one row up).
// Lines longer than ROW_STRIDE spill into the next row's positions; nothing breaks, the alignment just weakens.
import type { CharTokenizer } from './tokenizer.ts';
import { TRACE_CUE } from './trace-cue.ts';

export type PositionScheme = 'sequence' | 'grid';

/** Positions per row: longer than any trace line (a chess line is at most 84 characters: label, move, arrow, placement). */
export const ROW_STRIDE = 128;
/** The row the trace's line 0 takes: that of the initial state (row 0 is the domain line). */
export const TRACE_FIRST_ROW = 1;
/** The text of the line after which trace rows start again: the template's trace cue without its newline. */
const TRACE_LINE = TRACE_CUE.slice(0, -1);

/** What a cursor reads of its tokenizer (a worker thread's cursors read a stand-in built from the texts of the ids). */
export type CursorTokenizer = Pick<CharTokenizer, 'bos' | 'decode' | 'encodeText'>;

/** A cursor as plain data (it crosses threads): where it stands after the tokens pushed so far. */
export interface CursorState {
  index: number;
  row: number;
  column: number;
  line: string | null;
}

/** Walks a token sequence and gives each token its position; cloned to continue one prompt into several completions. */
export class PositionCursor {
  private index = 0;
  private row = 0;
  private column = 0;
  /** The current line's text while it could still be TRACE_LINE; null once it cannot. */
  private line: string | null = '';

  constructor(
    private readonly scheme: PositionScheme,
    private readonly tokenizer: CursorTokenizer,
    readonly newline: number = tokenizer.encodeText('\n')[0],
  ) {}

  /** The position of `token`, placed after every token pushed so far. */
  push(token: number): number {
    if (this.scheme === 'sequence') return this.index++;
    const position = this.row * ROW_STRIDE + this.column;
    if (token === this.newline) {
      this.row = this.line === TRACE_LINE ? TRACE_FIRST_ROW : this.row + 1;
      this.column = 0;
      this.line = '';
    } else {
      this.column++;
      if (this.line !== null && token !== this.tokenizer.bos) {
        const next = this.line + this.tokenizer.decode([token]);
        this.line = TRACE_LINE.startsWith(next) ? next : null;
      }
    }
    this.index++;
    return position;
  }

  /** Positions of several tokens in order. */
  pushAll(tokens: ArrayLike<number>): number[] {
    return Array.from(tokens, (t) => this.push(t));
  }

  clone(): PositionCursor {
    return PositionCursor.resume(this.scheme, this.tokenizer, this.newline, this.state());
  }

  state(): CursorState {
    return { index: this.index, row: this.row, column: this.column, line: this.line };
  }

  /** A cursor that continues from `state` (another cursor's, possibly on another thread). */
  static resume(
    scheme: PositionScheme,
    tokenizer: CursorTokenizer,
    newline: number,
    state: CursorState,
  ): PositionCursor {
    const cursor = new PositionCursor(scheme, tokenizer, newline);
    Object.assign(cursor, { index: state.index, row: state.row, column: state.column, line: state.line });
    return cursor;
  }
}
