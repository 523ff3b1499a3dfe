// Any policy as the ChatEngine behind `metrl serve`: chat messages become the model's prompt through its
// own chatPrompt (a Hugging Face model: its chat template and image processor; the built-in model:
// models/builtin/template.ts joins texts by newlines, resizes images to the model's size and appends the answer
// marker), then are decoded by the DecodeScheduler, with every other request in flight (decode-scheduler.ts).
import { UserError } from '../../core/errors.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { Policy } from '../../models/policy.ts';
import type { EncodedPrompt } from '../../models/types.ts';
import type { DecodeScheduler } from './decode-scheduler.ts';
import type { ChatEngine, EngineResult, EngineSampling } from './server.ts';

/** Room for a trace: a 5-move chess trace is about 330 characters, a 10-move one about 640; clients can ask for more. */
const DEFAULT_MAX_TOKENS = 1024;

/** The policy's prompts, decoded by `scheduler` (which samples through the engine: the policy or ONNX Runtime). */
export function policyEngine(policy: Policy, modelId: string, scheduler: DecodeScheduler): ChatEngine {
  const maxContext = policy.contextLimit;
  return {
    modelId,
    maxTokensLimit: maxContext,
    defaultMaxTokens: Math.min(DEFAULT_MAX_TOKENS, maxContext),
    async complete(messages: ChatMessage[], sampling: EngineSampling): Promise<EngineResult> {
      const arrived = scheduler.announce();
      let prompt: EncodedPrompt;
      try {
        prompt = await policy.chatPrompt(messages);
      } finally {
        arrived();
      }
      const choices = await scheduler.decode(decodeRequest(prompt, sampling, maxContext));
      return {
        promptTokens: prompt.tokens.length,
        choices: choices.map((c) => ({
          text: c.text,
          finishReason: c.finishReason,
          completionTokens: c.tokens.length,
        })),
      };
    },
  };
}

/** A request's sampling for one prompt, its length fitted to the context that the prompt leaves. */
export function decodeRequest(prompt: EncodedPrompt, sampling: EngineSampling, context: number) {
  const room = context - prompt.tokens.length;
  if (prompt.tokens.length === 0) throw new UserError('the prompt is empty (no tokens to generate after)');
  if (room < 1) throw new UserError(`prompt: ${prompt.tokens.length} tokens, the model's context is ${context}`);
  return {
    prompt,
    temperature: sampling.temperature,
    topP: sampling.topP,
    truncation: sampling.truncation,
    maxTokens: Math.min(sampling.maxTokens, room),
    n: sampling.n,
    seed: sampling.seed,
    stop: sampling.stop,
    topLogProbs: sampling.topLogprobs,
    ...(sampling.signal ? { signal: sampling.signal } : {}),
    ...(sampling.onProgress ? { onProgress: sampling.onProgress } : {}),
  };
}
