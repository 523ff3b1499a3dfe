// The built-in model's compact layout (models/template.ts) for the harness: what the in-process checkpoint source
// feeds the model, and what `--prompt compact` sends as chat messages to a checkpoint behind `metrl serve`, so both
// routes give the model the same tokens. Images are rendered at the model's size. The layout ends with the answer
// marker, so a reply is scored as marker + completion (scoredResponse).
import { ANSWER_CUE, episodeToModelInput, perceptionToModelInput } from '../models/template.ts';
import { COMPACT_STYLE, type CompactTemplate } from './prompts.ts';

export const compactTemplate: CompactTemplate = {
  trackInput: (env, query) => episodeToModelInput(query.episode, (episode, index) => env.renderAction(episode, index, env.imageSizes.model)),
  perceptionInput: (env, query) => perceptionToModelInput(env.domain, env.renderAction(query.episode, query.index, env.imageSizes.model)),
};

/** The text a reward function scores: in the compact layout the prompt ends with the marker the answer continues. */
export function scoredResponse(style: string, text: string): string {
  return style === COMPACT_STYLE && !/final answer\s*:/i.test(text) ? ANSWER_CUE + text : text;
}
