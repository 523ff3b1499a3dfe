// Chess prompts with the MET-Bench reference wording: the authors' harness (metbench/prompts.py of
// github.com/vanyacohen/MET-Bench, the ICML 2026 version, which the published scores come from; notes/benchmarks.md
// section 1 quotes the paper with elisions). Layout of one question, as the harness lays it out:
//   "<instructions>\n\n<question>\nThe initial state is: <FEN>\nHere are the moves played:\n", one move per line (a
//   text move as its UCI; an image move as the image, then "The move is from the green square to the red square.\n"),
//   then "\n<question>". Styles:
//   zero-shot  the harness's zero-shot question;
//   few-shot   each solved example as a user turn (zero-shot layout) and an assistant turn "FINAL ANSWER: <FEN>",
//              then the test question (the paper uses N = 5 examples from the train split);
//   cot        "Think step by step then output the final FEN as FINAL ANSWER: [FEN HERE].";
//   fen-trace  the harness's: a BOARD_AFTER_MOVE_k: <placement> line after every move, then the final FEN.
// Images are ImageRef placeholders resolved later (a file path in datasets, a PNG data URL for chat requests).
import { UserError } from '../../core/errors.ts';
import type { Episode, PromptMessage, PromptPart } from '../../core/episode.ts';
import type { PromptOptions } from '../env.ts';

export const CHESS_PROMPT_STYLES = ['zero-shot', 'few-shot', 'cot', 'fen-trace'] as const;
export type ChessPromptStyle = (typeof CHESS_PROMPT_STYLES)[number];

const INSTRUCTIONS = 'You are a helpful assistant that tracks chess moves in a game and produces the final FEN.';
const IMAGE_CAPTION = 'The move is from the green square to the red square.';
const ZERO_SHOT =
  'Now what is the final FEN? Only output the FEN and nothing else. If there are no moves you must still just predict ' +
  'the FEN. Start the next message with FINAL ANSWER:';
export const QUESTIONS: Record<ChessPromptStyle, string> = {
  'zero-shot': ZERO_SHOT,
  'few-shot': ZERO_SHOT,
  cot: 'What is the final FEN? Think step by step then output the final FEN as FINAL ANSWER: [FEN HERE].',
  'fen-trace':
    'Track the game one move at a time. After each move, write the board placement FEN using exactly this format: ' +
    'BOARD_AFTER_MOVE_1: [board placement FEN], BOARD_AFTER_MOVE_2: [board placement FEN], and so on. A board placement ' +
    "FEN has 8 ranks separated by '/', with digits for empty squares. After all moves, output the final full FEN as " +
    'FINAL ANSWER: [FEN HERE].',
};

const PERCEPTION_PROMPT = {
  instructions: 'You are a helpful assistant that interprets image-based actions in chess.',
  lead: 'Here is an image representing a move:',
  question:
    "In UCI notation, what move does the arrow on the chessboard represent? The move is from the green square to the red square. (e.g., 'e2e4'). Only output the move and nothing else.",
};

function isStyle(style: string): style is ChessPromptStyle {
  return (CHESS_PROMPT_STYLES as readonly string[]).includes(style);
}

/** The user turn of one question: instructions, question, initial state, the moves, the question again. */
function questionParts(episode: Episode, question: string): PromptPart[] {
  const parts: PromptPart[] = [
    {
      type: 'text',
      text: `${INSTRUCTIONS}\n\n${question}\nThe initial state is: ${episode.initialState}\nHere are the moves played:\n`,
    },
  ];
  episode.actions.forEach((action, index) => {
    if (action.modality === 'text') parts.push({ type: 'text', text: `${action.text}\n` });
    else {
      parts.push({ type: 'image', ref: { episode, index } });
      parts.push({ type: 'text', text: `${IMAGE_CAPTION}\n` });
    }
  });
  parts.push({ type: 'text', text: `\n${question}` });
  return parts;
}

/** The answer a solved example shows (few-shot). */
function exampleAnswer(episode: Episode): string {
  return `FINAL ANSWER: ${episode.target}`;
}

export function chessPrompt(episode: Episode, options: PromptOptions): PromptMessage[] {
  if (!isStyle(options.style))
    throw new UserError(
      `unknown chess prompt style '${options.style}' (choose from ${CHESS_PROMPT_STYLES.join(', ')})`,
    );
  const question = QUESTIONS[options.style];
  const messages: PromptMessage[] = [];
  if (options.style === 'few-shot') {
    for (const shot of options.shots) {
      messages.push({ role: 'user', parts: questionParts(shot, QUESTIONS['zero-shot']) });
      messages.push({ role: 'assistant', parts: [{ type: 'text', text: exampleAnswer(shot) }] });
    }
  }
  messages.push({ role: 'user', parts: questionParts(episode, question) });
  return messages;
}

/** Single-image probe (paper Figure 8): what move does the image of action `index` show? Answer: its UCI. */
export function chessPerceptionProbe(episode: Episode, index: number): { messages: PromptMessage[]; target: string } {
  const action = episode.actions[index];
  if (!action) throw new RangeError(`episode ${episode.id} has no action ${index}`);
  return {
    messages: [
      {
        role: 'user',
        parts: [
          { type: 'text', text: `${PERCEPTION_PROMPT.instructions}\n${PERCEPTION_PROMPT.lead}\n` },
          { type: 'image', ref: { episode, index } },
          { type: 'text', text: `\n${PERCEPTION_PROMPT.question}` },
        ],
      },
    ],
    target: action.text,
  };
}
