// Boxes prompts, after the paper's Appendix E: an instruction, "Description:" with the initial state and the
// operations, then the cloze "Statement: Box N contains". The paper's prompts have the model complete the sentence;
// ours ask for the completion after "FINAL ANSWER:" so that every environment is scored the same way.
// Styles: zero-shot; few-shot (solved train-split episodes as earlier chat turns, like the shell game's few-shot;
// the paper used two demonstrations); cot (think step by step first). AmbiRef prompts ask for adjectives, as the
// paper instructed; AltForms episodes say "container" where the base form says "box".
import { UserError } from '../../core/errors.ts';
import type { Episode, PromptMessage } from '../../core/episode.ts';
import type { PromptOptions } from '../env.ts';

export const BOXES_PROMPT_STYLES = ['zero-shot', 'few-shot', 'cot'] as const;
type Style = (typeof BOXES_PROMPT_STYLES)[number];

function instructions(episode: Episode): string {
  const noun = episode.meta.forms === 'alt' ? 'container' : 'box';
  const adjectives =
    episode.meta.ambiguousReferences === true
      ? ' Name every object with its adjective (for example "the small book").'
      : '';
  return (
    `Given the description after "Description:", complete the statement after "Statement:" so that it is true: ` +
    `list the objects in the ${noun} at the end of the description, each with "the" and joined by "and", ` +
    `or write "nothing" if the ${noun} is empty.${adjectives}`
  );
}

function description(episode: Episode): string {
  return [episode.initialState, ...episode.actions.map((a) => a.text)].join(' ');
}

function ask(episode: Episode, style: Style): string {
  const label = String(episode.meta.boxLabel ?? 'the box');
  if (style === 'cot') {
    return `Think step by step, following each operation in order, then give the contents of ${label} as FINAL ANSWER: [objects, or nothing].`;
  }
  return `Only output the contents of ${label} and nothing else. Start the next message with FINAL ANSWER:`;
}

function turn(episode: Episode, style: Style): PromptMessage {
  const text = `${instructions(episode)}\n\nDescription: ${description(episode)}\nStatement: ${episode.question ?? ''}\n\n${ask(episode, style)}`;
  return { role: 'user', parts: [{ type: 'text', text }] };
}

export function boxesPrompt(episode: Episode, options: PromptOptions): PromptMessage[] {
  const style = options.style as Style;
  if (!BOXES_PROMPT_STYLES.includes(style)) {
    throw new UserError(
      `boxes: unknown prompt style '${options.style}' (choose from ${BOXES_PROMPT_STYLES.join(', ')})`,
    );
  }
  const messages: PromptMessage[] = [];
  if (style === 'few-shot') {
    for (const shot of options.shots) {
      messages.push(turn(shot, style));
      messages.push({ role: 'assistant', parts: [{ type: 'text', text: `FINAL ANSWER: ${shot.target}` }] });
    }
  }
  messages.push(turn(episode, style));
  return messages;
}
