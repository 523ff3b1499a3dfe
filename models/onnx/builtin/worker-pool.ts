// ONNX Runtime worker threads, called synchronously: how the built-in model's
// sampler and learner use more than one core. onnxruntime-node runs a session on the calling JS thread, and ORT's
// intra-op threads barely help on this model's small matrices ([engines](../../../docs/engines.md#threads---threads-n)), so with
// `--threads N` (N ≥ 2, CPU) the work is split into independent pieces (prompt groups, learner chunks) run on N
// sessions of one intra-op thread each: one on the main thread, N − 1 in workers (worker.mjs → worker-main.ts).
// The Sampler and Learner contracts are synchronous, so the main thread posts a worker its piece, does its own, then
// blocks (Atomics.wait) until the worker's reply is queued and takes it with receiveMessageOnPort: no event loop turn.
// Each piece computes exactly what the single session computes for it (same graph, one thread each), so results do
// not depend on how pieces were spread.
import { availableParallelism } from 'node:os';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { UserError } from '../../../core/errors.ts';
import type { Feeds, SessionOptions } from '../session.ts';
import { fromWire, toWire, type WireTensor } from './worker-wire.ts';
import type { Device } from '../device.ts';

/**
 * How many sessions of one intra-op thread share the work for `threads` (undefined: every core) on `device`: the
 * thread count on the CPU when it is at least 2, else 1 (one session with `threads` intra-op threads; GPUs parallelise
 * themselves).
 */
export function executorCount(threads: number | undefined, device: Device | undefined, parallel = true): number {
  if (!parallel || (device && device !== 'cpu')) return 1;
  const n = threads ?? availableParallelism();
  return n >= 2 ? n : 1;
}

/**
 * How much work makes a split worth it, in token positions × model parameters (a product's multiply-adds, roughly):
 * a decode step's part below MIN_STEP_WORK, or a call's jobs together below MIN_JOBS_WORK, run on the main thread
 * alone, and a process whose calls never reach them starts no worker. Why: a worker costs a start of seconds and a round
 * trip per step or job, which a tiny model never earns back (the CLI's killed-run test on a 20 k-parameter model took
 * much longer with every call split). The built-in base (0.9 M
 * parameters) passes both with one prompt group: 8 rows make 7 M a step, a chess chunk about 10⁹.
 */
export const MIN_STEP_WORK = 2e6;
export const MIN_JOBS_WORK = 2e8;

/** Split whatever the work's size: `parallel: 'always'`, or unset and env METRL_ORT_SPLIT=always (tests on tiny models). */
export const splitAlways = (parallel: boolean | 'always' | undefined): boolean =>
  parallel === 'always' || (parallel === undefined && process.env.METRL_ORT_SPLIT === 'always');

type Reply = { ok: true; value: unknown } | { ok: false; error: string; user: boolean };

/** One worker thread and its synchronous channel. */
export class OrtWorker {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  /** Replies the worker has queued (it increments after each postMessage). */
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private received = 0;
  private pending = 0;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(new URL('./worker.mjs', import.meta.url), {
      workerData: { port: port2, signal: this.signal },
      transferList: [port2],
    });
    this.worker.unref();
    this.port.unref();
  }

  /** Setup requests (opening sessions, adapter values) whose replies are not yet checked. */
  private setups = 0;

  /**
   * Sends a setup request without waiting: its reply (null, or an error) is checked before the next request's, so a
   * worker starting or opening sessions overlaps the main thread's own work.
   */
  setup(message: Record<string, unknown>): void {
    this.port.postMessage(message);
    this.pending++;
    this.setups++;
  }

  /** Sends a request; its reply is taken, in order, by receive(). */
  post(message: Record<string, unknown>): void {
    while (this.setups > 0) {
      this.setups--;
      this.receive();
    }
    this.port.postMessage(message);
    this.pending++;
  }

  get busy(): boolean {
    return this.pending > 0;
  }

  /** Whether the oldest outstanding reply (a job's: setups are settled by post) has arrived (never blocks). */
  ready(): boolean {
    return this.pending > 0 && Atomics.load(this.signal, 0) > this.received;
  }

  /** The oldest outstanding reply, waiting for it; a worker's error is rethrown here (a UserError stays one). */
  receive<T>(): T {
    if (this.pending === 0) throw new Error('no request outstanding on this ONNX Runtime worker');
    for (;;) {
      const seen = Atomics.load(this.signal, 0);
      if (seen > this.received) {
        const got = receiveMessageOnPort(this.port);
        if (got) {
          this.received++;
          this.pending--;
          const reply = got.message as Reply;
          if (!reply.ok)
            throw reply.user ? new UserError(reply.error) : new Error(`ONNX Runtime worker: ${reply.error}`);
          return reply.value as T;
        }
      }
      Atomics.wait(this.signal, 0, seen, 100);
    }
  }

  call<T>(message: Record<string, unknown>): T {
    this.post(message);
    return this.receive<T>();
  }

  terminate(): void {
    void this.worker.terminate();
  }
}

/** The process's workers, started on first use and shared by every sampler and learner (each names its objects). */
const workers: OrtWorker[] = [];
let nextId = 1;

export function ortWorkers(count: number): OrtWorker[] {
  while (workers.length < count) workers.push(new OrtWorker());
  return workers.slice(0, count);
}

/** A fresh id for an object held in a worker. */
export const workerObjectId = (): number => nextId++;

/** An ORT session opened in a worker: start() posts a run, wait() takes its outputs. */
export class RemoteSession {
  readonly id = workerObjectId();
  constructor(
    readonly worker: OrtWorker,
    model: Uint8Array,
    options: SessionOptions,
  ) {
    worker.setup({ op: 'session', id: this.id, model, options: { ...options, threads: 1, device: undefined } });
  }

  start(feeds: Feeds, outputs?: string[]): void {
    this.worker.post({ op: 'run', id: this.id, feeds: toWire(feeds), outputs });
  }

  wait(): Feeds {
    return fromWire(this.worker.receive<Record<string, WireTensor>>());
  }

  run(feeds: Feeds, outputs?: string[]): Feeds {
    this.start(feeds, outputs);
    return this.wait();
  }

  dispose(): void {
    this.worker.call({ op: 'dispose', id: this.id });
  }
}

/**
 * Runs independent jobs on a local executor (the main thread) and workers. Each worker is kept `depth` jobs ahead (its
 * requests queue in its port, so it never waits for the main thread to hand it the next one); the main thread runs one
 * job between checks and blocks only at the end. Every result is stored at its job's index, so the outcome does not
 * depend on which executor ran what. `remote(worker, job)` posts a job's request (one reply), `collect(worker, job)`
 * takes its reply, `local(job)` runs one on the main thread.
 */
export function runJobs<J, R>(
  jobs: readonly J[],
  executors: {
    workers: readonly OrtWorker[];
    local: (job: J) => R;
    remote: (worker: OrtWorker, job: J) => void;
    collect: (worker: OrtWorker, job: J) => R;
  },
  depth = 2,
): R[] {
  const results = new Array<R>(jobs.length);
  // A single job runs here: nothing to overlap it with, and its feeds need not cross threads.
  if (jobs.length === 1 || executors.workers.length === 0) return jobs.map((job) => executors.local(job));
  const queues = new Map(executors.workers.map((w) => [w, [] as number[]]));
  let next = 0;
  const take = (w: OrtWorker) => {
    const j = queues.get(w)!.shift()!;
    results[j] = executors.collect(w, jobs[j]);
  };
  while (next < jobs.length) {
    for (const [w, queue] of queues) {
      while (queue.length > 0 && w.ready()) take(w);
      // A second job ahead only while enough remain for the main thread too (no worker tail at the end).
      while (
        queue.length < depth &&
        next < jobs.length &&
        (queue.length === 0 || jobs.length - next > queues.size + 1)
      ) {
        executors.remote(w, jobs[next]);
        queue.push(next++);
      }
    }
    if (next < jobs.length) {
      const j = next++;
      results[j] = executors.local(jobs[j]);
    }
  }
  for (const [w, queue] of queues) while (queue.length > 0) take(w);
  return results;
}
