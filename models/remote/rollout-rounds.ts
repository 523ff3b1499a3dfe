// Rollout rounds on servers as a trainer drives them ahead of its update (--async): a round is submitted — its
// adapter published to the shared folder, its requests on their way — and answered later, while the learner works.
// The rollout engine (remote-engine.ts) offers it beside the Sampler's sampleGroupsAsync, which is one round
// submitted and awaited.
import type { Completion, EncodedPrompt, SamplingOptions } from '../types.ts';

/** An adapter version to publish from a folder (a resumed run's rounds, sampled by versions its checkpoint kept). */
export interface AdapterSource {
  version: number;
  dir: string;
}

export interface SubmittedRound {
  /** The adapter version (optimiser updates) that samples the round. */
  version: number;
  /** Each prompt's group, once the servers have answered. */
  groups: Promise<Completion[][]>;
}

export interface RolloutRounds {
  urls: string[];
  /** Groups retried on another replica so far. */
  retries(): number;
  /**
   * Submit a round: the learner's current adapter (or `from`) published, the requests handed to the replicas' client
   * (in a worker thread beside the learner, with --async, so they go out at once). One seed per prompt.
   */
  submit(
    prompts: EncodedPrompt[],
    group: number,
    sampling: SamplingOptions,
    seeds: number[],
    from?: AdapterSource,
  ): Promise<SubmittedRound>;
  /** The folder a published version is kept in (the newest few are kept). */
  adapterFolder(version: number): string;
}
