// Replicas of a rollout server (vLLM, SGLang or `metrl serve --enable-lora`) as one generator of groups. Each group is one request (its prompt as token ids, n = the group size); the groups of a round are spread
// over the replicas, a few requests in flight per replica. An image prompt goes as chat messages with data-URL images
// (vLLM: /v1/chat/completions; SGLang: /generate with image_data), and the prompt the server tokenised is checked
// against metrl's own tokens where the server says it (vLLM: prompt_token_ids; SGLang: meta_info.prompt_tokens), so
// the learner scores exactly the tokens the server sampled after. Before its first request of a round a replica is given
// the current adapter (hot-loaded from the shared folder). A replica that refuses the connection, resets it or does
// not answer within the timeout is set aside for the round and its groups go to the others; each group is tried at
// most on every replica twice, and when no replica is left the round fails with one line naming each replica's
// reason. A replica set aside is tried again next round (a restarted server gets the adapter again). An answer that
// breaks the protocol (no token ids, ids or log-probs that cannot be, an answer past its size bound, an adapter the
// server cannot load, no LoRA routes) is a UserError at once (rollout-answer.ts): retrying elsewhere would hide a
// misconfigured server.
import type { ChatMessage } from '../../core/chat.ts';
import { UserError } from '../../core/errors.ts';
import type { Completion, SamplingOptions } from '../types.ts';
import { AnswerTooLarge, errorMessage, postJson, ServerDown, type HttpAnswer } from './http-json.ts';
import { vllmChatRequest, vllmCompletionRequest, vllmLoadAdapterRequest, VLLM_ADAPTER_NAME } from './vllm-protocol.ts';
import { sglangAdapterName, sglangGenerateRequest } from './sglang-protocol.ts';
import { answerBytes, noLoraRoute, readRolloutAnswer } from './rollout-answer.ts';

export const ROLLOUT_APIS = ['vllm', 'sglang'] as const;
export type RolloutApi = (typeof ROLLOUT_APIS)[number];

/** The adapter the servers must sample with: its version (optimiser updates) and its folder, readable by them. */
export interface AdapterVersion {
  version: number;
  path: string;
}

/**
 * A prompt as the servers get it: its token ids as metrl tokenised it (what the learner scores the completions
 * after) and, for a prompt with images, the same prompt as chat messages whose image_url parts are data URLs.
 */
export interface RolloutPrompt {
  tokens: number[];
  messages?: ChatMessage[];
}

/** Where a group was sampled. */
export interface GroupOrigin {
  server: string;
  adapterVersion: number;
}

interface Replica {
  url: string;
  loaded: AdapterVersion | null;
  loading: Promise<void> | null;
  /** Why it was set aside this round; null while it answers. */
  down: string | null;
}

/** Requests in flight per replica. */
const PER_REPLICA = 4;

/** "http://host:port/v1/" → "http://host:port" (vLLM's and SGLang's routes are added to the root). */
export function serverRoot(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}

export class RolloutPool {
  private readonly replicas: Replica[];
  /** Groups retried on another replica, over the run (for the step row). */
  retries = 0;

  constructor(
    urls: readonly string[],
    readonly api: RolloutApi,
    private readonly timeoutMs: number,
    /** Token ids the model has: a server's ids are checked against it (rollout-answer.ts). */
    private readonly vocabSize: number,
  ) {
    this.replicas = urls.map((url) => ({ url: serverRoot(url), loaded: null, loading: null, down: null }));
  }

  get urls(): string[] {
    return this.replicas.map((r) => r.url);
  }

  /** Each prompt's group, sampled with `adapter`, with where it was sampled. */
  async sampleGroups(
    prompts: RolloutPrompt[],
    group: number,
    options: SamplingOptions,
    seeds: number[],
    adapter: AdapterVersion,
  ): Promise<{ groups: Completion[][]; origins: GroupOrigin[] }> {
    for (const r of this.replicas) r.down = null;
    const groups: Completion[][] = new Array(prompts.length);
    const origins: GroupOrigin[] = new Array(prompts.length);
    const queue = prompts.map((_, k) => k);
    const tries = new Array<number>(prompts.length).fill(0);
    const maxTries = 2 * this.replicas.length;
    const active = new Map<Replica, number>(this.replicas.map((r) => [r, 0]));
    const inFlight = new Set<Promise<void>>();
    let fatal: unknown = null;
    const run = async (replica: Replica, k: number) => {
      try {
        await this.ensureAdapter(replica, adapter);
        groups[k] = await this.request(replica, prompts[k], group, options, seeds[k], adapter);
        origins[k] = { server: replica.url, adapterVersion: adapter.version };
      } catch (error) {
        if (!(error instanceof ServerDown)) {
          fatal ??= error instanceof AnswerTooLarge ? new UserError(`rollout server ${error.message}`) : error;
          return;
        }
        replica.down ??= error.message;
        replica.loaded = null;
        if (++tries[k] >= maxTries)
          fatal ??= new UserError(`rollout: group ${k} failed on ${tries[k]} tries (${error.message})`);
        else {
          this.retries++;
          queue.unshift(k);
        }
      }
    };
    // Each queued group goes to the replica still up with the fewest requests in flight (at most PER_REPLICA each);
    // when nothing is in flight and no replica is up, the groups left have nowhere to go.
    while (fatal === null) {
      for (;;) {
        const free = this.replicas
          .filter((r) => r.down === null && active.get(r)! < PER_REPLICA)
          .sort((a, b) => active.get(a)! - active.get(b)!);
        if (queue.length === 0 || free.length === 0) break;
        const replica = free[0];
        const k = queue.shift()!;
        active.set(replica, active.get(replica)! + 1);
        const job: Promise<void> = run(replica, k).finally(() => {
          active.set(replica, active.get(replica)! - 1);
          inFlight.delete(job);
        });
        inFlight.add(job);
      }
      if (inFlight.size === 0) break;
      await Promise.race(inFlight);
    }
    if (fatal !== null) throw fatal;
    if (queue.length > 0) {
      throw new UserError(
        `no rollout server answered (${this.replicas.map((r) => r.down ?? `${r.url}: unknown`).join('; ')}); the run stopped after its last checkpoint, and --resume continues it`,
      );
    }
    return { groups, origins };
  }

  private async ensureAdapter(replica: Replica, adapter: AdapterVersion): Promise<void> {
    while (replica.loaded?.version !== adapter.version) {
      if (replica.loading !== null) {
        await replica.loading;
        continue;
      }
      replica.loading = this.loadAdapter(replica, adapter).finally(() => (replica.loading = null));
      await replica.loading;
    }
  }

  private async loadAdapter(replica: Replica, adapter: AdapterVersion): Promise<void> {
    const vllm = this.api === 'vllm';
    const route = vllm ? '/v1/load_lora_adapter' : '/load_lora_adapter';
    const body = vllm
      ? vllmLoadAdapterRequest(adapter.path)
      : { lora_name: sglangAdapterName(adapter.version), lora_path: adapter.path };
    const answer = await postJson(replica.url + route, body, this.timeoutMs);
    // No such route (FastAPI's {"detail": "Not Found"}, metrl serve's "no route"): the server runs without LoRA.
    if (answer.status === 404 && /"detail":\s*"Not Found"|no route/.test(answer.text)) {
      throw noLoraRoute(replica.url, route);
    }
    if (answer.status > 500) throw new ServerDown(replica.url, `status ${answer.status} while loading the adapter`);
    if (answer.status < 200 || answer.status >= 300) {
      throw new UserError(
        `rollout server ${replica.url} cannot load the adapter ${adapter.path}: ${errorMessage(answer)} (the folder must be readable by the servers at that path: --rollout-adapter-dir)`,
      );
    }
    const previous = replica.loaded;
    replica.loaded = adapter;
    // SGLang loads each version under its own name: free the one before.
    if (!vllm && previous && previous.version !== adapter.version) {
      await postJson(
        replica.url + '/unload_lora_adapter',
        { lora_name: sglangAdapterName(previous.version) },
        this.timeoutMs,
      ).catch(() => undefined);
    }
  }

  private async request(
    replica: Replica,
    prompt: RolloutPrompt,
    group: number,
    options: SamplingOptions,
    seed: number,
    adapter: AdapterVersion,
  ): Promise<Completion[]> {
    const vllm = this.api === 'vllm';
    const chat = vllm && prompt.messages !== undefined;
    const url = replica.url + (vllm ? (chat ? '/v1/chat/completions' : '/v1/completions') : '/generate');
    const body = chat
      ? vllmChatRequest(VLLM_ADAPTER_NAME, prompt.messages!, group, options, seed)
      : vllm
        ? vllmCompletionRequest(VLLM_ADAPTER_NAME, prompt.tokens, group, options, seed)
        : sglangGenerateRequest(
            sglangAdapterName(adapter.version),
            prompt.tokens,
            group,
            options,
            seed,
            imageUrls(prompt.messages),
          );
    const answer: HttpAnswer = await postJson(url, body, this.timeoutMs, answerBytes(group, options.maxNewTokens));
    if (answer.status >= 500) throw new ServerDown(replica.url, `status ${answer.status}: ${errorMessage(answer)}`);
    if (answer.status !== 200)
      throw new UserError(
        `rollout server ${replica.url} refused the request (status ${answer.status}): ${errorMessage(answer)}`,
      );
    return readRolloutAnswer(answer.text, {
      server: replica.url,
      url,
      api: this.api,
      chat,
      group,
      maxTokens: options.maxNewTokens,
      vocabSize: this.vocabSize,
      prompt: prompt.tokens,
      model: vllm ? VLLM_ADAPTER_NAME : null,
    });
  }
}

/** The data URLs of a prompt's image_url parts, in order (SGLang's image_data). */
function imageUrls(messages: ChatMessage[] | undefined): string[] {
  return (messages ?? []).flatMap((m) =>
    typeof m.content === 'string' ? [] : m.content.flatMap((p) => (p.type === 'image_url' ? [p.image_url.url] : [])),
  );
}
