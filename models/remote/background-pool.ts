// The replicas' pool run beside the learner: a RolloutPool in a worker thread (rollout-worker.ts), so that a round's
// requests go out and its answers come back while the trainer's main thread is busy. The learner's passes are
// synchronous and hold the main thread's event loop for seconds; a pool on that loop would send nothing until they
// end, so generation could not overlap the update. A round is posted the moment sampleGroups is called (postMessage
// queues it for the worker at once); its answer arrives on the main thread the next time that thread awaits. The
// worker runs rounds one after another in the order they were posted: a replica never goes back to an older adapter,
// and each answer was sampled with the version its round named.
import { Worker } from 'node:worker_threads';
import { UserError } from '../../core/errors.ts';
import type { Completion, SamplingOptions } from '../types.ts';
import { serverRoot, type AdapterVersion, type GroupOrigin, type RolloutPrompt } from './rollout-pool.ts';
import type { PoolSettings, RoundMessage, RoundReply } from './round-messages.ts';

interface Waiting {
  resolve(value: { groups: Completion[][]; origins: GroupOrigin[] }): void;
  reject(error: Error): void;
}

export class BackgroundPool {
  /** Groups retried on another replica, over the run (as the worker last reported). */
  retries = 0;
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiting>();

  constructor(private readonly settings: PoolSettings) {}

  get urls(): string[] {
    return this.settings.urls.map(serverRoot);
  }

  /** RolloutPool.sampleGroups in the worker: the round is posted before this returns. */
  sampleGroups(
    prompts: RolloutPrompt[],
    group: number,
    options: SamplingOptions,
    seeds: number[],
    adapter: AdapterVersion,
  ): Promise<{ groups: Completion[][]; origins: GroupOrigin[] }> {
    const worker = this.start();
    const id = this.nextId++;
    const answer = new Promise<{ groups: Completion[][]; origins: GroupOrigin[] }>((resolve, reject) =>
      this.waiting.set(id, { resolve, reject }),
    );
    worker.postMessage({ id, prompts, group, options, seeds, adapter } satisfies RoundMessage);
    // A round in flight keeps the process alive (an awaited promise alone does not).
    worker.ref();
    return answer;
  }

  /** Stop the worker; rounds still in flight are abandoned. */
  close(): void {
    const worker = this.worker;
    this.worker = null;
    void worker?.terminate();
    this.fail(new Error('the rollout worker was closed'));
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./rollout-worker.mjs', import.meta.url), { workerData: this.settings });
    worker.unref();
    worker.on('message', (reply: RoundReply) => {
      this.retries = reply.retries;
      const waiting = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      if (!waiting) return;
      if (reply.ok) waiting.resolve({ groups: reply.groups, origins: reply.origins });
      else waiting.reject(reply.user ? new UserError(reply.message) : new Error(reply.message));
    });
    worker.on('error', (error: Error) => this.fail(error));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = null;
      this.fail(new Error(`the rollout worker exited (code ${code})`));
    });
    this.worker = worker;
    return worker;
  }

  private fail(error: Error): void {
    for (const w of this.waiting.values()) w.reject(error);
    this.waiting.clear();
  }
}
