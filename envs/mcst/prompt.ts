// MCST prompts (paper §4 and Figure 7): "Scenario:" with the initial state and the actions one per line, then
// "Question:". Direct asks for the answer alone; CoT adds "Let's think step by step"; State-Tracking (STP, the
// paper's Listing 1) adds the three constraints on executed vs NOT executed actions (we name all five negation forms
// our scenarios use). Every style ends with the answer format, "FINAL ANSWER: …", and a hint of the expected answer
// shape, so all environments are scored the same way. 'zero-shot' is an alias of direct and 'stp' of
// state-tracking; 'few-shot' is direct with solved train-split episodes as earlier chat turns.
import { UserError } from '../../core/errors.ts';
import type { Episode, PromptMessage } from '../../core/episode.ts';
import type { PromptOptions } from '../env.ts';
import type { AnswerKind } from './questions.ts';

export const MCST_PROMPT_STYLES = ['direct', 'cot', 'state-tracking', 'zero-shot', 'few-shot', 'stp'] as const;
type Style = (typeof MCST_PROMPT_STYLES)[number];
const CANONICAL: Record<Style, 'direct' | 'cot' | 'state-tracking'> = {
  direct: 'direct',
  'zero-shot': 'direct',
  'few-shot': 'direct',
  cot: 'cot',
  'state-tracking': 'state-tracking',
  stp: 'state-tracking',
};

const HINTS: Record<AnswerKind, string> = {
  name: 'a name, or "no one"',
  boolean: 'True or False',
  place: 'a place',
  number: 'a number',
  direction: 'north, east, south or west',
  coordinates: '(x, y)',
};

const STP_RULES =
  'Track the state carefully:\n' +
  '- Note which actions are EXECUTED versus NOT executed\n' +
  '- Update the world state ONLY for executed actions\n' +
  `- For any action containing "does not", "doesn't", "did not", "refuses to" or "NOT", treat the state as UNCHANGED after that action\n`;

function turn(episode: Episode, style: 'direct' | 'cot' | 'state-tracking'): PromptMessage {
  const hint = HINTS[episode.meta.answerKind as AnswerKind] ?? 'the answer';
  const scenario = `Scenario: ${episode.initialState}\n${episode.actions.map((a) => a.text).join('\n')}\n`;
  const question = `Question: ${episode.question ?? ''}\n`;
  const ending =
    style === 'cot'
      ? `Let's think step by step, then give the answer (${hint}) on the last line as FINAL ANSWER: <answer>.`
      : `Answer with ${hint} only, in the form FINAL ANSWER: <answer>.`;
  const text =
    style === 'state-tracking' ? `${scenario}${STP_RULES}${question}${ending}` : `${scenario}${question}${ending}`;
  return { role: 'user', parts: [{ type: 'text', text }] };
}

export function mcstPrompt(episode: Episode, options: PromptOptions): PromptMessage[] {
  const style = CANONICAL[options.style as Style];
  if (!style)
    throw new UserError(`mcst: unknown prompt style '${options.style}' (choose from ${MCST_PROMPT_STYLES.join(', ')})`);
  const messages: PromptMessage[] = [];
  for (const shot of options.style === 'few-shot' ? options.shots : []) {
    messages.push(turn(shot, style));
    messages.push({ role: 'assistant', parts: [{ type: 'text', text: `FINAL ANSWER: ${shot.target}` }] });
  }
  messages.push(turn(episode, style));
  return messages;
}
