// The worker thread of background-pool.ts: a RolloutPool of its own, its event loop free for the servers' answers
// while the trainer's main thread runs the learner. Rounds run in the order they arrive, each to its end before the
// next (background-pool.ts says why); a round's failure is sent back as its reply and the worker takes the next.
import { parentPort, workerData } from 'node:worker_threads';
import { UserError } from '../../core/errors.ts';
import { RolloutPool } from './rollout-pool.ts';
import type { PoolSettings, RoundMessage, RoundReply } from './round-messages.ts';

const settings = workerData as PoolSettings;
const pool = new RolloutPool(settings.urls, settings.api, settings.timeoutMs, settings.vocabSize);
let previous: Promise<void> = Promise.resolve();

parentPort!.on('message', (round: RoundMessage) => {
  previous = previous.then(async () => {
    let reply: RoundReply;
    try {
      const { groups, origins } = await pool.sampleGroups(
        round.prompts,
        round.group,
        round.options,
        round.seeds,
        round.adapter,
      );
      reply = { id: round.id, retries: pool.retries, ok: true, groups, origins };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      reply = { id: round.id, retries: pool.retries, ok: false, message, user: error instanceof UserError };
    }
    parentPort!.postMessage(reply);
  });
});
