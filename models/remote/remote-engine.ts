// Rollouts on vLLM / SGLang / `metrl serve` replicas, the learner here: an EngineSampler that wraps
// the in-process one. Its Sampler is the local one (encoding, scoring, evaluation: synchronous, in-process) plus
// sampleGroupsAsync, which sends the groups to the servers (rollout-pool.ts). The Sampler contract is synchronous
// and an HTTP answer is not; rather than block the event loop on a worker, the contract gained the optional async
// variant that the trainer's rollout phase (already async) awaits, so nothing else of the loop changes.
// Image prompts: the servers format and tokenise them themselves (chat messages with data-URL images), so the
// sampler's prompt() and chatPrompt() note, for each EncodedPrompt they return, how to state it as chat messages
// (PromptFormat.promptMessages, or the messages given); the pool checks the server's prompt tokens against metrl's.
// Adapters: syncLora(version) after each optimiser update only notes the version; before the next round the learner's
// adapter is written in PEFT layout to <adapterDir>/v<version>/ (a folder the servers read at the same path) and each
// replica hot-loads it before its first request of the round. A resumed run writes and loads its checkpoint's adapter.
import { renameSync, rmSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { ensureDir } from '../../core/files.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { Episode } from '../../core/episode.ts';
import type { Rng } from '../../core/rng.ts';
import type { Env } from '../../envs/env.ts';
import type { EngineSampler } from '../engine.ts';
import type { Sampler } from '../sampler.ts';
import type { Completion, EncodedPrompt, SamplingOptions } from '../types.ts';
import { RolloutPool, type AdapterVersion, type RolloutApi, type RolloutPrompt } from './rollout-pool.ts';

export interface RemoteRolloutOptions {
  urls: readonly string[];
  api: RolloutApi;
  timeoutSeconds: number;
  /** Shared folder the servers read adapters from. */
  adapterDir: string;
  /** Write the learner's adapter (PEFT layout) into a folder. */
  saveAdapter(dir: string): void;
  /** Token ids the model has (the servers' answers are checked against it). */
  vocabSize: number;
}

/** Adapter folders kept: the current one and the one before (a replica may still be loading it). */
const KEEP_VERSIONS = 2;

export function remoteEngine(local: EngineSampler, options: RemoteRolloutOptions): EngineSampler {
  if (options.urls.length === 0) throw new UserError('--rollout-server: give at least one URL');
  const pool = new RolloutPool(options.urls, options.api, options.timeoutSeconds * 1000, options.vocabSize);
  const adapterDir = resolve(options.adapterDir);
  let pending: number | null = 0; // the adapter the run starts with (fresh: version 0)
  let current: AdapterVersion | null = null;

  const publish = (version: number): AdapterVersion => {
    ensureDir(adapterDir);
    const final = join(adapterDir, `v${version}`);
    const tmp = join(adapterDir, `.v${version}.${process.pid}.tmp`);
    rmSync(tmp, { recursive: true, force: true });
    ensureDir(tmp);
    options.saveAdapter(tmp);
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
    const versions = readdirSync(adapterDir)
      .filter((n) => /^v\d+$/.test(n))
      .map((n) => Number(n.slice(1)))
      .sort((a, b) => b - a);
    for (const old of versions.slice(KEEP_VERSIONS))
      if (old !== version) rmSync(join(adapterDir, `v${old}`), { recursive: true, force: true });
    return { version, path: final };
  };

  // How each prompt the sampler made reads as chat messages (asked for only when it has images).
  const asChat = new WeakMap<EncodedPrompt, () => Promise<ChatMessage[]>>();
  const rolloutPrompt = async (prompt: EncodedPrompt): Promise<RolloutPrompt> => {
    if (prompt.images.length === 0) return { tokens: prompt.tokens };
    const messages = asChat.get(prompt);
    if (!messages) throw new Error('rollout: an image prompt the sampler did not make (no chat messages to send)');
    return { tokens: prompt.tokens, messages: await messages() };
  };

  const sampleGroupsAsync = async (
    prompts: EncodedPrompt[],
    group: number,
    sampling: SamplingOptions,
    rng: Rng,
  ): Promise<Completion[][]> => {
    const requests: RolloutPrompt[] = [];
    for (const p of prompts) requests.push(await rolloutPrompt(p));
    if (pending !== null) {
      current = publish(pending);
      pending = null;
    }
    // One seed per group from the run's rollout Rng: a resumed run asks for the same samples (where the server honours seeds).
    const seeds = prompts.map(() => Math.floor(rng.next() * 2 ** 31));
    const { groups, origins } = await pool.sampleGroups(requests, group, sampling, seeds, current!);
    return groups.map((g, k) => g.map((c) => ({ ...c, origin: origins[k] })));
  };

  const sampler = new Proxy(local.sampler, {
    get: (target, key) => {
      if (key === 'sampleGroupsAsync') return sampleGroupsAsync;
      if (key === 'prompt') {
        return (env: Env, episode: Episode) => {
          const encoded = target.prompt(env, episode);
          asChat.set(encoded, () => target.promptMessages(env, episode));
          return encoded;
        };
      }
      if (key === 'chatPrompt') {
        return async (messages: ChatMessage[]) => {
          const encoded = await target.chatPrompt(messages);
          asChat.set(encoded, async () => messages);
          return encoded;
        };
      }
      const value = (target as unknown as Record<PropertyKey, unknown>)[key];
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as Sampler;

  return {
    ...local,
    sampler,
    syncLora: (version?: number) => {
      local.syncLora(version);
      pending = version ?? (current?.version ?? 0) + 1;
    },
    describe: `${local.describe} here; rollouts on ${pool.urls.length} ${options.api} server${pool.urls.length === 1 ? '' : 's'} (${pool.urls.join(', ')})`,
    remote: { urls: pool.urls, retries: () => pool.retries },
    // The learner's adapters are never the servers' exactly: the reference comes from the local engine's own pass.
    referenceIsPolicy: () => local.referenceIsPolicy(),
    dispose: () => local.dispose(),
  };
}
