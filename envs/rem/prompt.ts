// REM prompts: the paper's system prompt (Figure 13, with "in Blender" dropped and the answer marker added), then one
// user message with the question, the frames in order with the camera action written between consecutive frames,
// and the question again with the answer instruction. Styles: 'zero-shot' (answer only, as the paper asks) and 'cot'
// (think step by step first). Few-shot examples from other episodes are not used: each would add a whole trajectory
// of images.
import { UserError } from '../../core/errors.ts';
import type { Episode, PromptMessage, PromptPart } from '../../core/episode.ts';
import type { PromptOptions } from '../env.ts';

export const REM_PROMPT_STYLES = ['zero-shot', 'cot'] as const;

const REM_SYSTEM_PROMPT =
  'You are an agent walking through an environment. You will receive a series of images, each taken after taking an ' +
  'action in the environment (either moving straight or turning 15 degrees left/right). You will also receive a ' +
  'question that you must answer correctly after seeing all images. You will see objects with a shape and a color. ' +
  'The possible shapes include cuboid, cone, sphere. The possible colors include red, green, blue, yellow, purple, ' +
  'brown, black, orange. Please answer the question based on the set of images. Answer as concisely as possible, ' +
  "usually only a single word. If it's a question where you're asked to compare the number of objects, respond only " +
  "with whichever object there are more of, or equal, if there are the same number of objects. If you're asked to " +
  "count objects, answer only with the number (as a number, not in english) of objects you see. If you're asked " +
  "whether you saw something before, after, or at the same time as another object, answer only with 'before', " +
  "'after', or 'same time' only. If the first time you see an object is in an image before another object, it comes " +
  'before (and the other comes after). If two objects appear in the same frame together for their first viewing, ' +
  "its same time. If you're asked whether an object is to the left or right of another, answer only with 'left' or " +
  "'right'.";

export function remPrompt(episode: Episode, options: PromptOptions): PromptMessage[] {
  if (!(REM_PROMPT_STYLES as readonly string[]).includes(options.style)) {
    throw new UserError(`rem: unknown prompt style '${options.style}' (choose from ${REM_PROMPT_STYLES.join(', ')})`);
  }
  const question = episode.question ?? '';
  const n = episode.actions.length;
  const parts: PromptPart[] = [
    {
      type: 'text',
      text: `Question: ${question}\n${n === 1 ? 'Here is the image:' : `Here are the ${n} images, with the action taken between them:`}\n`,
    },
  ];
  episode.actions.forEach((action, i) => {
    if (i > 0) parts.push({ type: 'text', text: `\nAction: ${action.text}\n` });
    parts.push({ type: 'text', text: `Image ${i + 1}:\n` }, { type: 'image', ref: { episode, index: i } });
  });
  const instruction =
    options.style === 'cot'
      ? 'Think step by step, then give your answer on a last line starting with FINAL ANSWER:'
      : 'Answer only with the answer, on one line starting with FINAL ANSWER:';
  parts.push({ type: 'text', text: `\n${question}\n${instruction}` });
  return [
    { role: 'system', parts: [{ type: 'text', text: REM_SYSTEM_PROMPT }] },
    { role: 'user', parts },
  ];
}
