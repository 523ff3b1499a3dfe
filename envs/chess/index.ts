// The chess environment of MET-Bench: episodes from real games (a PGN or UCI file) or the built-in synthetic games,
// moves shown as UCI text or as images of the move on an empty board, answers scored per square.
import { asksLenient, scoreChess } from '../../rewards/chess.ts';
import type { Env } from '../env.ts';
import { chessBaselineAnswer, randomChessMove } from './baseline.ts';
import { Board } from './board.ts';
import { chessCandidates } from './episodes.ts';
import { readChessMove } from './perception-answer.ts';
import { CHESS_PROMPT_STYLES, chessPerceptionProbe, chessPrompt } from './prompt.ts';
import { renderMove } from './render.ts';

export const chessEnv: Env = {
  domain: 'chess',
  promptStyles: CHESS_PROMPT_STYLES,
  // 512 px for chat VLMs (labels and letter badges); 64 px (8 px per square) for the built-in model's 64×64 patches.
  imageSizes: { chat: 512, model: 64 },
  candidates: chessCandidates,
  renderAction(episode, index, size) {
    const action = episode.actions[index];
    if (!action) throw new RangeError(`episode ${episode.id} has no action ${index}`);
    return renderMove(action.text, size);
  },
  actionImageFromText: true,
  prompt: chessPrompt,
  perceptionProbe: chessPerceptionProbe,
  readPerceptionAnswer: readChessMove,
  score: (input) => scoreChess(input),
  // Every summary says how answers were parsed, so that a number scored with the lenient extension is never taken
  // for one comparable with MET-Bench's.
  summarize: (rows) => ({
    answerParsing: rows.some((r) => asksLenient(r.input.meta))
      ? 'lenient: short FENs and bare FENs accepted (not the MET-Bench harness)'
      : 'reference',
  }),
  // Per-square rewards of one board are not independent: the interval is over example scores (clustered by example).
  intervalMethod: 'mean',
  baselineAnswer: chessBaselineAnswer,
  randomPerceptionAnswer: randomChessMove,
  // The placement field only: it is what the per-square reward reads, and the trace stays a third shorter.
  traceStart: (episode) => episode.initialState.split(' ')[0],
  traceStates(episode) {
    const board = Board.fromFen(episode.initialState);
    return episode.actions.map((action) => {
      board.playUci(action.text);
      return board.fen().split(' ')[0];
    });
  },
};
