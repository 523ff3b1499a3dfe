// How a model turns tasks into tokens. The policy, not the trainer, decides how an Episode becomes a
// prompt: the built-in model lays it out in its compact template (models/builtin/template.ts), a Hugging Face model
// renders chat messages through its own tokenizer and chat template. The trainer, the evaluator and `metrl serve` only
// call these methods, so a new architecture brings its own layout with it.
import type { ChatMessage } from '../core/chat.ts';
import type { Episode } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import type { EncodedPrompt } from './types.ts';

export interface PromptFormat {
  /** An episode as this model's prompt: its template, image actions rendered at the size it reads. */
  prompt(env: Env, episode: Episode): EncodedPrompt;
  /** Chat messages (OpenAI format, images as data URLs) as this model's prompt: what `metrl serve` feeds it. */
  chatPrompt(messages: ChatMessage[]): Promise<EncodedPrompt>;
  /**
   * prompt(env, episode) as OpenAI chat messages (images as PNG data URLs), for a server that formats and tokenises
   * the prompt itself (vLLM's /v1/chat/completions, `metrl serve`): chatPrompt of these messages is the same prompt.
   */
  promptMessages(env: Env, episode: Episode): Promise<ChatMessage[]>;
  /**
   * The text the environment's reward function scores for a completion. A template that ends the prompt with the
   * answer cue ("FINAL ANSWER: ") puts it back in front of the completion; chat models answer in full and score as is.
   */
  responseOf(env: Env, completionText: string): string;
  /** Tokens of the episode's reference completion (target and EOS): fits the completion budget to the task. */
  referenceTokens(env: Env, episode: Episode): number;
}
