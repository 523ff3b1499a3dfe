// Rollouts drawn ahead of the update (--async on rollout servers; TRL's AsyncGRPOTrainer, max_staleness K). The first
// round of step t is submitted once step t − K has drawn its rounds, sampled by the adapter the learner holds then
// (t − K − 1 updates, or 0 at the start), so the servers generate steps t − K + 1 … t while the learner trains step
// t − K, and no round is more than K updates older than the policy that trains on it. The schedule depends on step
// numbers only, never on which answer came first: each round's prompts (the next in the data order), seeds (the
// rollout Rng) and adapter version are fixed when it is submitted, so a run is the same whatever the timing, and a
// checkpoint that records the rounds submitted ahead (with the adapters that sample them) resumes to the same run.
// K = 0 submits each round at the start of its own step: the synchronous run.
import type { Rng } from '../../core/rng.ts';
import { groupSeeds } from '../../models/remote/remote-engine.ts';
import type { RolloutRounds } from '../../models/remote/rollout-rounds.ts';
import type { Completion, EncodedPrompt, SamplingOptions } from '../../models/types.ts';
import { staleGroups } from './staleness.ts';

/** A round submitted ahead of its step, as a checkpoint records it. */
export interface RoundAhead {
  step: number;
  /** Indices into the training prompts, in the data order. */
  prompts: number[];
  seeds: number[];
  /** The adapter version that samples it. */
  version: number;
}

/** What the queue draws from and submits to. */
export interface QueueSource {
  rounds: RolloutRounds;
  trainPrompts: readonly EncodedPrompt[];
  order: { take(k: number): number[] };
  rng: Rng;
  /** Prompts of a step's first round (promptsPerStep × gradientAccumulation) and completions per prompt. */
  promptsPerRound: number;
  groupSize: number;
  sampling: SamplingOptions;
  /** K. */
  maxStaleness: number;
  /** The run's last step: nothing is submitted beyond it. */
  lastStep: number;
}

/** A step's first round: its prompts (indices), their groups, and the groups regenerated for being too stale. */
export interface TakenRound {
  prompts: number[];
  groups: Completion[][];
  regenerated: number;
}

export class RolloutQueue {
  private readonly submitted = new Map<number, { ahead: RoundAhead; groups: Promise<Completion[][]> }>();

  constructor(private readonly source: QueueSource) {}

  /** After step `step` has drawn its rounds: submit the first rounds of steps step + 1 … step + K not yet submitted. */
  async fill(step: number): Promise<void> {
    const last = Math.min(this.source.lastStep, step + this.source.maxStaleness);
    for (let t = step + 1; t <= last; t++) if (!this.submitted.has(t)) await this.submit(t);
  }

  /**
   * Step `step`'s first round (submitted now when it was not), once answered. A group sampled more than K updates
   * before the policy it trains is dropped and drawn again with the learner's adapter (TRL drops it and takes the
   * next); the schedule never submits one, so this guards the rule rather than shaping the run.
   */
  async take(step: number): Promise<TakenRound> {
    if (!this.submitted.has(step)) await this.submit(step);
    const { ahead, groups: answer } = this.submitted.get(step)!;
    this.submitted.delete(step);
    const groups = await answer;
    const versions = groups.map((g) => g[0]?.origin?.adapterVersion ?? ahead.version);
    const stale = staleGroups(step, versions, this.source.maxStaleness);
    if (stale.length > 0) {
      const { rounds, trainPrompts, groupSize, sampling, rng } = this.source;
      const again = await rounds.submit(
        stale.map((g) => trainPrompts[ahead.prompts[g]]),
        groupSize,
        sampling,
        groupSeeds(rng, stale.length),
      );
      const fresh = await again.groups;
      stale.forEach((g, k) => (groups[g] = fresh[k]));
    }
    return { prompts: ahead.prompts, groups, regenerated: stale.length };
  }

  /** Rounds submitted for steps after `step`, oldest first: what a checkpoint of `step` keeps. */
  ahead(step: number): RoundAhead[] {
    return [...this.submitted.values()].map((r) => r.ahead).filter((r) => r.step > step);
  }

  /** A resumed run's rounds ahead, submitted again as recorded, each sampled by the adapter folder `adapterOf` names. */
  async resubmit(rounds: readonly RoundAhead[], adapterOf: (version: number) => string): Promise<void> {
    for (const r of rounds) {
      const dir = adapterOf(r.version);
      await this.submitRound(r, { version: r.version, dir });
    }
  }

  private async submit(step: number): Promise<void> {
    const { order, rng, promptsPerRound } = this.source;
    const prompts = order.take(promptsPerRound);
    const seeds = groupSeeds(rng, promptsPerRound);
    await this.submitRound({ step, prompts, seeds, version: -1 });
  }

  private async submitRound(round: RoundAhead, from?: { version: number; dir: string }): Promise<void> {
    const { rounds, trainPrompts, groupSize, sampling } = this.source;
    const submitted = await rounds.submit(
      round.prompts.map((i) => trainPrompts[i]),
      groupSize,
      sampling,
      round.seeds,
      from,
    );
    // A round that fails while nobody awaits it must not end the process as an unhandled rejection: take() awaits
    // the same promise and reports its error then.
    submitted.groups.catch(() => undefined);
    this.submitted.set(round.step, { ahead: { ...round, version: submitted.version }, groups: submitted.groups });
  }
}
