// The queue of rounds submitted ahead of the update (--async): when each step's first round is submitted and which
// adapter version samples it, for K = 0 (each round at the start of its own step: the synchronous schedule), 1 and 2;
// prompts and seeds drawn in submission order; nothing past the run's last step; a checkpoint's rounds submitted again
// with their recorded adapters; and a group more than K updates stale dropped and drawn again.
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../core/rng.ts';
import { DataOrder } from '../../../trainer/data-order.ts';
import { RolloutQueue } from '../../../trainer/grpo/rollout-queue.ts';
import { staleGroups, staleness } from '../../../trainer/grpo/staleness.ts';
import { groupSeeds } from '../../../models/remote/remote-engine.ts';
import type { RolloutRounds } from '../../../models/remote/rollout-rounds.ts';
import type { Completion, EncodedPrompt } from '../../../models/types.ts';

const prompts: EncodedPrompt[] = Array.from({ length: 6 }, (_, i) => ({ tokens: [i], images: [] }));

/** Rounds on a fake server: each call recorded; a round's completions say the version that sampled them. */
function fakeServer(version: () => number) {
  const calls: { prompts: number[]; seeds: number[]; version: number; from?: string }[] = [];
  const rounds: RolloutRounds = {
    urls: ['http://fake'],
    retries: () => 0,
    adapterFolder: (v) => `/adapters/v${v}`,
    submit: async (sent, group, _sampling, seeds, from) => {
      const v = from?.version ?? version();
      calls.push({ prompts: sent.map((p) => p.tokens[0]), seeds, version: v, from: from?.dir });
      const groups = sent.map((p): Completion[] =>
        Array.from({ length: group }, () => ({
          tokens: [p.tokens[0], v],
          text: '',
          logProbs: new Float32Array(2),
          finished: true,
          origin: { server: 'http://fake', adapterVersion: v },
        })),
      );
      return { version: v, groups: Promise.resolve(groups) };
    },
  };
  return { rounds, calls };
}

function queue(maxStaleness: number, version: () => number, lastStep = 5) {
  const server = fakeServer(version);
  const order = new DataOrder(prompts.length, 3);
  const rng = new Rng(4, 'rollouts');
  const q = new RolloutQueue({
    rounds: server.rounds,
    trainPrompts: prompts,
    order,
    rng,
    promptsPerRound: 2,
    groupSize: 2,
    sampling: { temperature: 1, topP: 1, maxNewTokens: 4 },
    maxStaleness,
    lastStep,
  });
  return { q, calls: server.calls };
}

/** Run the loop's schedule for `steps` steps: take step s's round, fill ahead, then the update (version s). */
async function schedule(maxStaleness: number, steps: number) {
  let version = 0;
  const { q, calls } = queue(maxStaleness, () => version, steps);
  const taken: number[][] = [];
  for (let s = 1; s <= steps; s++) {
    const round = await q.take(s);
    taken.push(round.groups.map((g) => g[0].origin!.adapterVersion));
    await q.fill(s);
    version = s;
  }
  return { taken, calls, q };
}

describe('rollout queue', () => {
  it('K = 0 submits each round when its step starts, sampled by the policy that trains on it', async () => {
    const { taken, calls } = await schedule(0, 4);
    expect(taken).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    expect(calls.map((c) => c.version)).toEqual([0, 1, 2, 3]);
  });

  it('K = 1 submits step s + 1 once step s has drawn, so it is sampled one update behind', async () => {
    const { taken } = await schedule(1, 5);
    expect(taken.map((t) => t[0])).toEqual([0, 0, 1, 2, 3]);
    expect(taken.map((t, s) => staleness(s + 1, t[0]))).toEqual([0, 1, 1, 1, 1]);
  });

  it('K = 2 runs two steps ahead, never past the last step, and draws prompts and seeds in submission order', async () => {
    const { taken, calls, q } = await schedule(2, 5);
    expect(taken.map((t) => t[0])).toEqual([0, 0, 0, 1, 2]);
    // Steps 1, then 2 and 3 after step 1 drew, then 4 and 5: five rounds, none for a step 6.
    expect(calls).toHaveLength(5);
    expect(q.ahead(5)).toEqual([]);
    const order = new DataOrder(prompts.length, 3);
    const rng = new Rng(4, 'rollouts');
    for (const call of calls) {
      expect(call.prompts).toEqual(order.take(2));
      expect(call.seeds).toEqual(groupSeeds(rng, 2));
    }
  });

  it('keeps the rounds ahead for a checkpoint and submits them again, as recorded, with their adapters', async () => {
    let version = 0;
    const first = queue(2, () => version);
    await first.q.take(1);
    await first.q.fill(1);
    version = 1;
    const ahead = first.q.ahead(1);
    expect(ahead.map((r) => [r.step, r.version])).toEqual([
      [2, 0],
      [3, 0],
    ]);
    // A resumed run: a new queue, its draws continuing from the checkpoint's, the rounds ahead submitted again.
    const resumed = queue(2, () => version);
    await resumed.q.resubmit(ahead, (v) => `/checkpoint/rollout-adapters/v${v}`);
    expect(resumed.calls.map((c) => [c.prompts, c.seeds, c.version, c.from])).toEqual(
      ahead.map((r) => [r.prompts, r.seeds, 0, '/checkpoint/rollout-adapters/v0']),
    );
    const round = await resumed.q.take(2);
    expect(round.prompts).toEqual(ahead[0].prompts);
    expect(round.regenerated).toBe(0);
  });

  it('drops a group more than K updates stale and draws it again with the learner’s adapter', async () => {
    const { q, calls } = queue(1, () => 3);
    // A round for step 4 sampled by version 0: 3 updates behind, past K = 1.
    await q.resubmit([{ step: 4, prompts: [1, 2], seeds: [7, 8], version: 0 }], (v) => `/a/v${v}`);
    const round = await q.take(4);
    expect(round.regenerated).toBe(2);
    expect(round.groups.map((g) => g[0].origin!.adapterVersion)).toEqual([3, 3]);
    expect(calls.map((c) => [c.prompts, c.version])).toEqual([
      [[1, 2], 0],
      [[1, 2], 3],
    ]);
  });

  it('staleness is the updates between the sampling adapter and the policy of the step', () => {
    expect(staleness(1, 0)).toBe(0);
    expect(staleness(5, 2)).toBe(2);
    expect(staleGroups(5, [4, 3, 2, 1], 1)).toEqual([2, 3]);
    expect(staleGroups(5, [4, 3], 1)).toEqual([]);
  });
});
