// The part of an ONNX Runtime Sampler that is its policy's: the prompt format,
// the tokenizer and the limits. An ORT sampler runs the forward passes in its graphs and asks the wrapped policy,
// which stays the Learner, for everything else, so both engines encode, decode and score text identically. The two
// ORT samplers (builtin/builtin-sampler.ts for the built-in model, hf/hf-sampler.ts for Hugging Face checkpoints) extend this.
import type { ChatMessage } from '../../core/chat.ts';
import type { Episode } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import type { PromptFormat } from '../prompt-format.ts';
import type { Sampler } from '../sampler.ts';
import type { EncodedPrompt, ModelInput } from '../types.ts';

/** What a policy must offer for a sampler to delegate these to it. */
export type FrontedPolicy = PromptFormat &
  Pick<Sampler, 'contextLimit' | 'imageSize' | 'imageTokenId' | 'encode' | 'decode'>;

export abstract class PolicyFront<P extends FrontedPolicy> implements PromptFormat {
  constructor(readonly policy: P) {}

  get contextLimit(): number {
    return this.policy.contextLimit;
  }
  get imageSize(): number {
    return this.policy.imageSize;
  }
  get imageTokenId(): number | undefined {
    return this.policy.imageTokenId;
  }
  encode(input: ModelInput): EncodedPrompt {
    return this.policy.encode(input);
  }
  decode(tokens: number[]): string {
    return this.policy.decode(tokens);
  }
  prompt(env: Env, episode: Episode): EncodedPrompt {
    return this.policy.prompt(env, episode);
  }
  chatPrompt(messages: ChatMessage[]): Promise<EncodedPrompt> {
    return this.policy.chatPrompt(messages);
  }
  promptMessages(env: Env, episode: Episode): Promise<ChatMessage[]> {
    return this.policy.promptMessages(env, episode);
  }
  responseOf(env: Env, completionText: string): string {
    return this.policy.responseOf(env, completionText);
  }
  referenceTokens(env: Env, episode: Episode): number {
    return this.policy.referenceTokens(env, episode);
  }
}
