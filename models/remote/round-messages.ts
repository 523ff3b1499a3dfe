// What crosses between the trainer's thread and the rollout worker (background-pool.ts, rollout-worker.ts): the
// settings the worker starts with, a round, and the worker's answer to it. Its own file so that neither side imports
// the other (the worker is loaded by path: background-pool.ts starts rollout-worker.mjs).
import type { Completion, SamplingOptions } from '../types.ts';
import type { AdapterVersion, GroupOrigin, RolloutApi, RolloutPrompt } from './rollout-pool.ts';

/** A round as it crosses to the worker. */
export interface RoundMessage {
  id: number;
  prompts: RolloutPrompt[];
  group: number;
  options: SamplingOptions;
  seeds: number[];
  adapter: AdapterVersion;
}

/** The worker's answer to a round: its groups, or the error that stopped it (a UserError is one line for the user). */
export type RoundReply = { id: number; retries: number } & (
  | { ok: true; groups: Completion[][]; origins: GroupOrigin[] }
  | { ok: false; message: string; user: boolean }
);

/** What the worker is started with. */
export interface PoolSettings {
  urls: readonly string[];
  api: RolloutApi;
  timeoutMs: number;
  /** Token ids the model has (the worker's pool checks the servers' answers against it). */
  vocabSize: number;
}
