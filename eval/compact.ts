// The built-in model's compact layout (models/builtin/template.ts) for the harness: what the in-process checkpoint source
// feeds the model, and what `--prompt compact` sends as chat messages to a checkpoint behind `metrl serve`, so both
// routes give the model the same tokens. Images are rendered at the model's size. Replies are scored as the trainer
// scores completions (scoredResponse).
import type { Env } from '../envs/env.ts';
import {
  ANSWER_CUE,
  episodeToModelInput,
  perceptionToModelInput,
  responseForScoring,
} from '../models/builtin/template.ts';
import { COMPACT_STYLE, type CompactTemplate } from './query-to-chat.ts';

export const compactTemplate: CompactTemplate = {
  trackInput: (env, query) => episodeToModelInput(env, query.episode),
  // One image, labelled as the action is labelled in the trace.
  perceptionInput: (env, query) =>
    perceptionToModelInput(env.domain, [env.renderAction(query.episode, query.index, env.imageSizes.model)], 0),
};

/**
 * The text a reward function scores. Compact tracking: as the trainer scores it (models/builtin/template.ts); compact
 * perception (no env): the reply is the bare action, so the marker goes in front. Other styles: the reply as is.
 */
export function scoredResponse(style: string, text: string, env?: Env): string {
  if (style !== COMPACT_STYLE) return text;
  if (env) return responseForScoring(env, text);
  return /final answer\s*:/i.test(text) ? text : ANSWER_CUE + text;
}
