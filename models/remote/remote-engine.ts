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
// With --async the replicas' client runs in a worker thread (background-pool.ts) and the trainer submits rounds ahead
// of its update (rollout-rounds.ts): each round publishes the adapter the learner holds when it is submitted.
// Every completion carries the server's log-probs as its samplingLogProbs and, as sentPrompt, the print of the prompt
// the server was sent (an image prompt's chat messages read back through the trainer's own processor), which the
// trainer checks against what its learner scores.
import { cpSync, renameSync, rmSync, readdirSync } from 'node:fs';
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
import { promptPrint, type PromptPrint } from '../prompt-print.ts';
import { RolloutPool, type AdapterVersion, type RolloutApi, type RolloutPrompt } from './rollout-pool.ts';
import { BackgroundPool } from './background-pool.ts';
import type { AdapterSource, RolloutRounds, SubmittedRound } from './rollout-rounds.ts';

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
  /** The replicas' client in a worker thread beside the learner (--async), so that rounds go out while it works. */
  background?: boolean;
  /** Adapter versions kept in adapterDir, at least 2 (--async keeps those its rounds ahead were sampled by). */
  keepVersions?: number;
}

/** Adapter folders kept by default: the current one and the one before (a replica may still be loading it). */
const KEEP_VERSIONS = 2;

/** One seed per group from the run's rollout Rng: a resumed run asks for the same samples (where the server honours seeds). */
export function groupSeeds(rng: Rng, groups: number): number[] {
  return Array.from({ length: groups }, () => Math.floor(rng.next() * 2 ** 31));
}

export function remoteEngine(local: EngineSampler, options: RemoteRolloutOptions): EngineSampler {
  if (options.urls.length === 0) throw new UserError('--rollout-server: give at least one URL');
  const timeoutMs = options.timeoutSeconds * 1000;
  const pool: Pick<RolloutPool, 'urls' | 'retries' | 'sampleGroups'> & { close?(): void } = options.background
    ? new BackgroundPool({ urls: options.urls, api: options.api, timeoutMs, vocabSize: options.vocabSize })
    : new RolloutPool(options.urls, options.api, timeoutMs, options.vocabSize);
  const adapterDir = resolve(options.adapterDir);
  const keep = Math.max(KEEP_VERSIONS, options.keepVersions ?? KEEP_VERSIONS);
  let pending: number | null = 0; // the adapter the run starts with (fresh: version 0)
  let current: AdapterVersion | null = null;
  const folderOf = (version: number) => join(adapterDir, `v${version}`);

  /** Write version `version` into the shared folder: the learner's adapter, or a copy of `from`. */
  const publish = (version: number, from?: string): AdapterVersion => {
    ensureDir(adapterDir);
    const final = folderOf(version);
    const tmp = join(adapterDir, `.v${version}.${process.pid}.tmp`);
    rmSync(tmp, { recursive: true, force: true });
    if (from) cpSync(from, tmp, { recursive: true });
    else {
      ensureDir(tmp);
      options.saveAdapter(tmp);
    }
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
    const versions = readdirSync(adapterDir)
      .filter((n) => /^v\d+$/.test(n))
      .map((n) => Number(n.slice(1)))
      .sort((a, b) => b - a);
    for (const old of versions.slice(keep))
      if (old !== version) rmSync(folderOf(old), { recursive: true, force: true });
    return { version, path: final };
  };

  // How each prompt the sampler made reads as chat messages (asked for only when it has images).
  const asChat = new WeakMap<EncodedPrompt, () => Promise<ChatMessage[]>>();
  /** The request for a prompt, and the print of what the server is sent (an image prompt: read back as metrl reads it). */
  const rolloutPrompt = async (prompt: EncodedPrompt): Promise<{ request: RolloutPrompt; sent: PromptPrint }> => {
    const imageTokenId = local.sampler.imageTokenId;
    if (prompt.images.length === 0)
      return { request: { tokens: prompt.tokens }, sent: promptPrint(prompt, imageTokenId) };
    const messages = asChat.get(prompt);
    if (!messages) throw new Error('rollout: an image prompt the sampler did not make (no chat messages to send)');
    const sentMessages = await messages();
    const readBack = await local.sampler.chatPrompt(sentMessages);
    return { request: { tokens: prompt.tokens, messages: sentMessages }, sent: promptPrint(readBack, imageTokenId) };
  };

  const submit = async (
    prompts: EncodedPrompt[],
    group: number,
    sampling: SamplingOptions,
    seeds: number[],
    from?: AdapterSource,
  ): Promise<SubmittedRound> => {
    const requests: RolloutPrompt[] = [];
    const sent: PromptPrint[] = [];
    for (const p of prompts) {
      const { request, sent: print } = await rolloutPrompt(p);
      requests.push(request);
      sent.push(print);
    }
    let adapter: AdapterVersion;
    if (from) adapter = publish(from.version, from.dir);
    else {
      if (pending !== null) {
        current = publish(pending);
        pending = null;
      }
      adapter = current!;
    }
    // Posted now (to the worker with --async): the servers generate while the caller goes on.
    const answer = pool.sampleGroups(requests, group, sampling, seeds, adapter);
    return {
      version: adapter.version,
      groups: answer.then(({ groups, origins }) =>
        groups.map((g, k) =>
          g.map((c) => ({ ...c, samplingLogProbs: c.logProbs, sentPrompt: sent[k], origin: origins[k] })),
        ),
      ),
    };
  };

  const sampleGroupsAsync = async (
    prompts: EncodedPrompt[],
    group: number,
    sampling: SamplingOptions,
    rng: Rng,
  ): Promise<Completion[][]> => (await submit(prompts, group, sampling, groupSeeds(rng, prompts.length))).groups;

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
    remote: {
      urls: pool.urls,
      retries: () => pool.retries,
      submit,
      adapterFolder: folderOf,
    } satisfies RolloutRounds,
    // The learner's adapters are never the servers' exactly: the reference comes from the local engine's own pass.
    referenceIsPolicy: () => local.referenceIsPolicy(),
    dispose: () => {
      pool.close?.();
      local.dispose();
    },
  };
}
