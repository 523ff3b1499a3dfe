// A local checkpoint (the built-in policy or a Hugging Face model) as an in-process model source: the compact style is
// laid out with the built-in model's template, other styles go in as the reference chat messages,
// encoded, and generated through the shared BatchedGenerator, so `--workers N` puts N prompts into each decoding
// batch, on the inference engine chosen (--engine: tfjs, or ONNX Runtime for the built-in model, the adapter's
// weights read once it is loaded). Greedy unless --temperature says otherwise.
import type { Domain } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import { BatchedGenerator } from '../batched-generator.ts';
import { compactTemplate } from '../compact.ts';
import { loadPolicy } from '../../models/load.ts';
import { openEngine, type Engine, type OrtRuntime } from '../../models/engine.ts';
import type { ModelSource, Query, SamplingSettings, SourceReply } from '../types.ts';
import type { EncodedPrompt } from '../../models/types.ts';
import { COMPACT_STYLE, queryToChat } from '../query-to-chat.ts';

export interface CheckpointEngine {
  /** Unset: the model's default (models/engine.ts). */
  engine?: Engine;
  ort?: OrtRuntime;
}

export async function checkpointSource(
  dir: string,
  sampling: SamplingSettings,
  seed: number,
  envs: Map<Domain, Env>,
  base?: string,
  { engine: engineName, ort }: CheckpointEngine = {},
): Promise<ModelSource> {
  const loaded = await loadPolicy(dir, { ...(base ? { base } : {}), hostWeights: engineName === 'ort' });
  // The adapter is loaded: an ORT session built now reads its weights (syncLora at construction).
  const engine = await openEngine(loaded.policy, engineName, ort).catch((error: unknown) => {
    loaded.policy.dispose();
    throw error;
  });
  const generator = new BatchedGenerator(engine.sampler, seed);
  const maxContext = loaded.policy.contextLimit;
  // The compact style is the built-in model's own layout; every other style is the reference wording, given to the
  // policy as the chat messages a hosted model gets (its chat template decides the tokens).
  const promptOf = async (env: Env, query: Query): Promise<EncodedPrompt> => {
    if (query.style === COMPACT_STYLE) {
      return generator.encode(
        query.kind === 'track' ? compactTemplate.trackInput(env, query) : compactTemplate.perceptionInput(env, query),
      );
    }
    return loaded.policy.chatPrompt(await queryToChat(env, query));
  };
  return {
    label: dir,
    loaded: {
      base: loaded.base,
      adapter: loaded.adapter,
      adapter_step: loaded.adapterStep,
      backend: loaded.backend,
      engine: engine.engine,
      ...(engine.engine === 'ort' ? { ort: { device: ort?.device ?? 'cpu', threads: ort?.threads ?? null } } : {}),
    },
    async complete(query): Promise<SourceReply> {
      const env = envs.get(query.episode.domain)!;
      const prompt = await promptOf(env, query);
      const room = maxContext - prompt.tokens.length;
      if (room < 1)
        throw new Error(`prompt of ${prompt.tokens.length} tokens does not fit the model's context of ${maxContext}`);
      const [completion] = await generator.generate(prompt, {
        temperature: sampling.temperature ?? 0,
        topP: 1,
        maxNewTokens: Math.min(sampling.maxTokens, room),
      });
      const completionTokens = completion.tokens.length;
      return {
        text: completion.text,
        usage: {
          prompt_tokens: prompt.tokens.length,
          completion_tokens: completionTokens,
          total_tokens: prompt.tokens.length + completionTokens,
        },
        finishReason: completion.finished ? 'stop' : 'length',
      };
    },
    async close() {
      engine.dispose();
      loaded.policy.dispose();
    },
  };
}
