// Minecraft forward-prediction prompts with the MET-Bench harness's wording (metbench/prompts.py of
// github.com/vanyacohen/MET-Bench, the ICML 2026 version): a text action, the initial state and four candidate next
// states, either as JSON game-state snapshots in one text message (text modality) or as first-person screenshots
// (image modality: "Input frame:", the frame, "Candidate next frames:", then "Choice i:" and each frame, every text a
// part of its own as the harness sends them). Styles:
//   zero-shot  "… Output only a single number 1-4. Start the next message with FINAL ANSWER:"
//   cot        "… Think step by step about how …, then output your answer as FINAL ANSWER: [1-4]." (the harness's
//              "paper" setting for Minecraft)
// The modality is the action's (Episode.actions[0].modality), so relabelling the episode switches it as for every
// domain. Image slots: 0 the initial frame, i the candidate i (envs/dataset-images.ts holds the pictures).
import { UserError } from '../../core/errors.ts';
import type { Episode, PromptMessage, PromptPart } from '../../core/episode.ts';
import type { PromptOptions } from '../env.ts';

export const MINECRAFT_PROMPT_STYLES = ['zero-shot', 'cot'] as const;

const MINECRAFT_TEXT_INSTRUCTIONS =
  'You are evaluating a Minecraft gameplay trajectory. You will see a JSON game-state snapshot and an action that was ' +
  'performed. Your task is to identify which of the candidate game states is the correct next state after the action was taken.';
const MINECRAFT_IMAGE_INSTRUCTIONS =
  'You are evaluating a Minecraft gameplay trajectory. You will see a first-person screenshot from the game and an ' +
  'action that was performed. Your task is to identify which of the candidate images shows the correct next frame after the action was taken.';

/** The question, by modality and style; n candidates. */
function minecraftFinalQuestion(image: boolean, style: string, action: string, n: number): string {
  const ask = image
    ? `Which image (1-${n}) shows the correct next frame after the action "${action}"?`
    : `Which game state (1-${n}) is the correct next state after the action "${action}"?`;
  if (style === 'cot')
    return `${ask} Think step by step about how the ${image ? 'scene' : 'game state'} should change given the action, then output your answer as FINAL ANSWER: [1-${n}].`;
  return `${ask} Output only a single number 1-${n}. Start the next message with FINAL ANSWER:`;
}

/** The candidate states in text, as the text prompt lists them (also the built-in model's question). */
export function minecraftQuestion(candidates: string[]): string {
  return candidates.map((state, i) => `Choice ${i + 1}:\n${state}`).join('\n\n');
}

export function candidateStates(episode: Episode): string[] {
  const states = episode.meta.candidate_states;
  if (!Array.isArray(states) || states.some((s) => typeof s !== 'string'))
    throw new UserError(`minecraft: episode ${episode.id} has no candidate states`);
  return states as string[];
}

export function minecraftPrompt(episode: Episode, options: PromptOptions): PromptMessage[] {
  if (!(MINECRAFT_PROMPT_STYLES as readonly string[]).includes(options.style)) {
    throw new UserError(
      `minecraft: unknown prompt style '${options.style}' (choose from ${MINECRAFT_PROMPT_STYLES.join(', ')})`,
    );
  }
  const action = episode.actions[0];
  if (!action) throw new UserError(`minecraft: episode ${episode.id} has no action`);
  const candidates = candidateStates(episode);
  const image = action.modality === 'image';
  const question = minecraftFinalQuestion(image, options.style, action.text, candidates.length);
  if (!image) {
    const listed = candidates.map((state, i) => `\n\nChoice ${i + 1}:\n${state}`).join('');
    const text = `${MINECRAFT_TEXT_INSTRUCTIONS}\n\nAction performed: ${action.text}\n\nInput state:\n${episode.initialState}\n\nCandidate next states:${listed}\n\n${question}`;
    return [{ role: 'user', parts: [{ type: 'text', text }] }];
  }
  const parts: PromptPart[] = [
    { type: 'text', text: `${MINECRAFT_IMAGE_INSTRUCTIONS}\n\nAction performed: ${action.text}\n\nInput frame:` },
    { type: 'image', ref: { episode, index: 0 } },
    { type: 'text', text: '\nCandidate next frames:' },
  ];
  candidates.forEach((_, i) => {
    // The harness sends each label as its own text part, the first right after "Candidate next frames:" unmerged.
    parts.push({ type: 'text', text: `\nChoice ${i + 1}:`, separate: true });
    parts.push({ type: 'image', ref: { episode, index: i + 1 } });
  });
  parts.push({ type: 'text', text: `\n${question}` });
  return [{ role: 'user', parts }];
}
