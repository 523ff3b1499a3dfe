// The TokenEngine behind `metrl serve`'s vLLM dialect (routes in server.ts, shapes in completions.ts and
// chat-token-ids.ts): token-id prompts, and chat messages (images as data URLs) tokenised by the policy's chatPrompt,
// generated through the same BatchedGenerator as plain chat requests, the sampled tokens' log-probs in
// vLLM's two modes (raw_logprobs, vLLM's default: temperature 1, what every metrl sampler returns; processed_logprobs:
// at the request's temperature, rescored by the serving engine, what TRL's vllm-serve runs and what the trainer's
// importance-sampling correction compares with), and with --enable-lora one runtime LoRA slot: loading an adapter
// replaces the policy's adapters (the engine follows: syncLora, or a new ONNX Runtime session when the adapter's
// rank, alpha or targets change the graph), unloading restores the adapter the server started with (or B = 0).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { Rng } from '../../core/rng.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { Policy } from '../../models/policy.ts';
import type { EncodedPrompt } from '../../models/types.ts';
import type { Sampler } from '../../models/sampler.ts';
import type { LoraSettings } from '../../models/learner.ts';
import type { BatchedGenerator } from '../batched-generator.ts';
import type { TokenChoice } from './completions.ts';
import type { EngineSampling, TokenEngine } from './server.ts';

export const LOGPROBS_MODES = ['raw_logprobs', 'processed_logprobs'] as const;
export type LogprobsMode = (typeof LOGPROBS_MODES)[number];

export interface TokenEngineOptions {
  policy: Policy;
  modelId: string;
  generator: BatchedGenerator;
  /** The engine's sampler now (it changes when an adapter of another shape is loaded). */
  sampler: () => Sampler;
  logprobsMode: LogprobsMode;
  /** --enable-lora: the adapter folder the server started with (null: none), and how the engine follows a change. */
  lora?: { startup: string | null; startupSettings: LoraSettings | null; follow(changedShape: boolean): Promise<void> };
}

const settingsKey = (s: LoraSettings | null) =>
  s === null ? 'none' : JSON.stringify([s.r, s.alpha, [...(s.targets ?? [])]]);

export function tokenEngine(options: TokenEngineOptions): TokenEngine {
  const { policy, modelId, generator } = options;
  let loaded: string | null = null;
  let shape = settingsKey(options.lora?.startupSettings ?? null);
  let lastSettings = options.lora?.startupSettings ?? null;
  // One load or unload at a time: a second waits for the first.
  let busy: Promise<void> = Promise.resolve();
  const serial = (work: () => Promise<void>) => (busy = busy.then(work, work));

  const apply = async (settings: LoraSettings) => {
    const key = settingsKey(settings);
    const changed = key !== shape;
    shape = key;
    lastSettings = settings;
    await options.lora!.follow(changed);
  };

  const adapters = options.lora && {
    load: (name: string, path: string, inplace: boolean) =>
      serial(async () => {
        if (loaded !== null && loaded !== name)
          throw new UserError(`metrl serve holds one adapter and '${loaded}' is loaded; unload it first`);
        if (loaded === name && !inplace)
          throw new UserError(
            `The lora adapter '${name}' has already been loaded (send load_inplace: true to replace it).`,
          );
        if (!existsSync(join(path, 'adapter_config.json')))
          throw new UserError(`lora_path ${path}: no adapter_config.json that this server can read`);
        await apply(policy.loadAdapter(path));
        loaded = name;
      }),
    unload: (name: string) =>
      serial(async () => {
        if (loaded !== name) throw new UserError(`The lora adapter '${name}' cannot be found.`);
        const startup = options.lora!.startup;
        if (startup !== null) await apply(policy.loadAdapter(startup));
        else if (lastSettings) {
          policy.attachLora(lastSettings, new Rng(0, 'unload')); // fresh adapters, B = 0: the base model
          await apply(lastSettings);
        }
        loaded = null;
      }),
  };

  /** One prompt's n choices, their log-probs in the server's mode. */
  const complete = async (prompt: EncodedPrompt, sampling: EngineSampling): Promise<TokenChoice[]> => {
    const room = policy.contextLimit - prompt.tokens.length;
    if (room < 1)
      throw new UserError(`prompt: ${prompt.tokens.length} tokens, the model's context is ${policy.contextLimit}`);
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
    const processed =
      options.logprobsMode === 'processed_logprobs' && sampling.temperature > 0
        ? rescore(
            options.sampler(),
            prompt,
            completions.map((c) => c.tokens),
            sampling.temperature,
          )
        : null;
    return completions.map((c, i) => ({
      tokens: c.tokens,
      text: c.text,
      logProbs: processed ? processed[i] : Array.from(c.logProbs),
      finishReason: c.finished ? ('stop' as const) : ('length' as const),
    }));
  };

  return {
    servedModel: () => loaded ?? modelId,
    encodeText: (text) => policy.encode([{ type: 'text', text }]).tokens,
    tokenText: (token) => policy.decode([token]),
    async completeTokens(prompts: number[][], sampling: EngineSampling): Promise<TokenChoice[][]> {
      await busy; // never sample from a half-loaded adapter
      return Promise.all(prompts.map((tokens) => complete({ tokens, images: [] }, sampling)));
    },
    async completeChat(
      messages: ChatMessage[],
      sampling: EngineSampling,
    ): Promise<{ prompt: number[]; choices: TokenChoice[] }> {
      const arrived = generator.announce();
      let prompt: EncodedPrompt;
      try {
        prompt = await policy.chatPrompt(messages);
      } finally {
        arrived();
      }
      await busy;
      return { prompt: prompt.tokens, choices: await complete(prompt, sampling) };
    },
    ...(adapters ? { adapters } : {}),
  };
}

/** Log-probs of the sampled tokens under softmax(logits / T): vLLM's processed_logprobs (top-p renormalisation aside). */
function rescore(sampler: Sampler, prompt: EncodedPrompt, completions: number[][], temperature: number): number[][] {
  const rows = completions.map((completion) => ({ prompt, completion }));
  const lp = sampler.tokenLogProbs(rows, { useLora: true, temperature });
  const values = lp.logProbs.dataSync();
  const width = lp.logProbs.shape[1];
  lp.logProbs.dispose();
  lp.mask.dispose();
  lp.entropy?.dispose();
  return completions.map((c, i) => Array.from(values.subarray(i * width, i * width + c.length)));
}
