// Any policy as the ChatEngine behind `metrl serve`: chat messages become the model's prompt through its
// own chatPrompt (a Hugging Face model: its chat template and image processor; the built-in model:
// models/builtin/template.ts joins texts by newlines, resizes images to the model's size and appends the answer
// marker), then are generated through the BatchedGenerator, so concurrent requests with the same sampling settings
// share one decoding batch.
import { UserError } from '../../core/errors.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { Policy } from '../../models/policy.ts';
import type { Sampler } from '../../models/sampler.ts';
import type { EncodedPrompt } from '../../models/types.ts';
import { BatchedGenerator } from '../batched-generator.ts';
import type { ChatEngine, EngineResult, EngineSampling } from './server.ts';

/** Room for a trace: a 5-move chess trace is about 330 characters, a 10-move one about 640; clients can ask for more. */
const DEFAULT_MAX_TOKENS = 1024;

/** `sampler` generates (default: the policy; models/engine.ts gives ONNX Runtime's); prompts are the policy's. */
export function policyEngine(
  policy: Policy,
  modelId: string,
  seed: number,
  sampler: Sampler = policy,
): ChatEngine & { generator: BatchedGenerator } {
  const generator = new BatchedGenerator(sampler, seed);
  const maxContext = policy.contextLimit;
  return {
    modelId,
    generator,
    maxTokensLimit: maxContext,
    defaultMaxTokens: Math.min(DEFAULT_MAX_TOKENS, maxContext),
    async complete(messages: ChatMessage[], sampling: EngineSampling): Promise<EngineResult> {
      const arrived = generator.announce();
      let prompt: EncodedPrompt;
      try {
        prompt = await policy.chatPrompt(messages);
      } finally {
        arrived();
      }
      const room = maxContext - prompt.tokens.length;
      if (room < 1)
        throw new UserError(
          `messages: the prompt is ${prompt.tokens.length} tokens, the model's context is ${maxContext}`,
        );
      const completions = await generator.generate(
        prompt,
        {
          temperature: sampling.temperature,
          topP: sampling.topP,
          ...sampling.truncation,
          maxNewTokens: Math.min(sampling.maxTokens, room),
        },
        sampling.n,
        sampling.seed,
      );
      return {
        promptTokens: prompt.tokens.length,
        choices: completions.map((c) => ({
          text: c.text,
          finishReason: c.finished ? 'stop' : 'length',
          completionTokens: c.tokens.length,
        })),
      };
    },
  };
}
