// Shell game prompts with the MET-Bench reference wording: the authors' harness (metbench/prompts.py of
// github.com/vanyacohen/MET-Bench, the ICML 2026 version, which the published scores come from; notes/benchmarks.md §1
// quotes the paper): "<instructions>\n\n<question>\nThe initial state is: <n>\nHere are the moves played:\n", the moves
// one per line (an image action is the image, then its caption and a newline), then "\n<question>". Few-shot puts solved train-split episodes before the question as earlier chat turns whose
// answers are "FINAL ANSWER: n". The single-image perception probe follows the paper's Figure 9.
import { UserError } from '../../core/errors.ts';
import type { Episode, PromptMessage, PromptPart } from '../../core/episode.ts';
import type { PromptOptions } from '../env.ts';

export const SHELL_PROMPT_STYLES = ['zero-shot', 'few-shot', 'cot'] as const;

export const SHELL_INSTRUCTIONS =
  'The shell game is a classic game where a ball is hidden under one of three shells. You are a helpful assistant that ' +
  'tracks the position of the ball during the swaps and determines the final position of the ball. We label the shells ' +
  '1, 2, 3. The ball starts under one of the numbered shells which we call the initial state, and each move is shell ' +
  "swap of shell x and y written 'x swap y'.";

export const SHELL_IMAGE_CAPTION = 'The shells with the numbers highlighted green are being swapped.';

const DIRECT_QUESTION =
  'Now what is the final position of the ball? Only output the final ball location as a single number 1, 2, or 3. If ' +
  'there are no moves you must still just predict the location. Start the next message with FINAL ANSWER:';
const COT_QUESTION =
  'What is the final position of the ball? Think step by step then output the final ball location as ' +
  'FINAL ANSWER: [1, 2, or 3].';

const QUESTIONS: Record<(typeof SHELL_PROMPT_STYLES)[number], string> = {
  'zero-shot': DIRECT_QUESTION,
  'few-shot': DIRECT_QUESTION,
  cot: COT_QUESTION,
};

/** One user turn: instructions, question, initial state, the moves, the question again. */
function episodeTurn(episode: Episode, question: string): PromptMessage {
  const parts: PromptPart[] = [
    {
      type: 'text',
      text: `${SHELL_INSTRUCTIONS}\n\n${question}\nThe initial state is: ${episode.initialState}\nHere are the moves played:\n`,
    },
  ];
  episode.actions.forEach((action, index) => {
    if (action.modality === 'text') {
      parts.push({ type: 'text', text: `${action.text}\n` });
    } else {
      parts.push({ type: 'image', ref: { episode, index } });
      parts.push({ type: 'text', text: `${SHELL_IMAGE_CAPTION}\n` });
    }
  });
  parts.push({ type: 'text', text: `\n${question}` });
  return { role: 'user', parts };
}

export function shellPrompt(episode: Episode, options: PromptOptions): PromptMessage[] {
  const style = options.style as keyof typeof QUESTIONS;
  const question = QUESTIONS[style];
  if (question === undefined) {
    throw new UserError(
      `shell: unknown prompt style '${options.style}' (choose from ${SHELL_PROMPT_STYLES.join(', ')})`,
    );
  }
  const messages: PromptMessage[] = [];
  if (style === 'few-shot') {
    for (const shot of options.shots) {
      messages.push(episodeTurn(shot, question));
      messages.push({ role: 'assistant', parts: [{ type: 'text', text: `FINAL ANSWER: ${shot.target}` }] });
    }
  }
  messages.push(episodeTurn(episode, question));
  return messages;
}

/** Paper Figure 9: one image, "which shells are being swapped" → "1 swap 3". */
export function shellPerceptionProbe(episode: Episode, index: number): { messages: PromptMessage[]; target: string } {
  const action = episode.actions[index];
  if (!action) throw new RangeError(`shell perception probe: episode ${episode.id} has no action ${index}`);
  const parts: PromptPart[] = [
    {
      type: 'text',
      text: 'You are a helpful assistant that interprets image-based actions in the shell game.\nHere is an image representing a swap:\n',
    },
    { type: 'image', ref: { episode, index } },
    {
      type: 'text',
      text:
        "\nIn shell game notation, which shells are being swapped in the image? Shells are labeled '1', '2', '3' and the " +
        "shells being swapped have their numbers highlighted in green. Only output a dash-separated pair like '1 swap 3' " +
        'and nothing else.',
    },
  ];
  return { messages: [{ role: 'user', parts }], target: action.text };
}
