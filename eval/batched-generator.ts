// Generation for the built-in policy in the in-process checkpoint source (`metrl evaluate --checkpoint`): requests
// that arrive while the model is busy are queued, and each flush decodes all queued prompts with the same sampling
// settings as one batch (one prefill, one batched step per token), so N workers cost far less than N separate
// generations. Generation is synchronous tfjs work on the event loop; batching is what makes concurrency pay. A
// request that names a seed is decoded alone with its own Rng, so its answer does not depend on what else was in
// flight. (`metrl serve` decodes in rounds instead, so that it can stream, stop and drop: eval/serve/decode-scheduler.ts.)
import { Rng } from '../core/rng.ts';
import type { Completion, EncodedPrompt, ModelInput, SamplingOptions } from '../models/types.ts';
import type { Sampler } from '../models/sampler.ts';

interface Pending {
  prompt: EncodedPrompt;
  sampling: SamplingOptions;
  n: number;
  seed: number | null;
  resolve: (c: Completion[]) => void;
  reject: (e: unknown) => void;
}

export interface GeneratorStats {
  batches: number;
  prompts: number;
}

/** Longest a flush waits for announced requests (still decoding their images) to join the batch. */
const MAX_GATHER_MS = 25;

export class BatchedGenerator {
  private queue: Pending[] = [];
  private scheduled = false;
  /** Requests announced but not yet queued: flushes wait briefly for them. */
  private preparing = 0;
  private firstQueuedAt = 0;
  private readonly rng: Rng;
  readonly stats: GeneratorStats = { batches: 0, prompts: 0 };

  constructor(
    readonly policy: Sampler,
    seed: number,
    /** Most prompts decoded together (memory grows with batch × context). */
    private readonly maxBatch = 16,
  ) {
    this.rng = new Rng(seed, 'generator');
  }

  encode(input: ModelInput): EncodedPrompt {
    return this.policy.encode(input);
  }

  /**
   * Announce a request that will call generate() soon (an HTTP request still decoding its images). While announced
   * requests are on their way, a flush waits for them (at most MAX_GATHER_MS), so that they share its batch instead of
   * each waiting for a batch of its own behind the one in progress. Call the returned function before generate().
   */
  announce(): () => void {
    this.preparing++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.preparing--;
    };
  }

  generate(prompt: EncodedPrompt, sampling: SamplingOptions, n = 1, seed: number | null = null): Promise<Completion[]> {
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0) this.firstQueuedAt = performance.now();
      this.queue.push({ prompt, sampling, n, seed, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Let every request that is already waiting on the event loop join this batch.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    if (this.preparing > 0 && performance.now() - this.firstQueuedAt < MAX_GATHER_MS) {
      setTimeout(() => this.flush(), 1);
      return;
    }
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    const groups = new Map<string, Pending[]>();
    for (const p of queue) {
      const key =
        p.seed !== null
          ? `seed:${groups.size}:${p.seed}`
          : `${p.sampling.temperature}|${p.sampling.topP}|${p.sampling.maxNewTokens}|${p.n}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key)!.push(p);
    }
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += this.maxBatch) this.run(group.slice(i, i + this.maxBatch));
    }
  }

  private run(batch: Pending[]): void {
    const { sampling, n, seed } = batch[0];
    const rng = seed !== null ? new Rng(seed, 'request') : this.rng;
    try {
      let results: Completion[][];
      if (batch.length > 1)
        results = this.policy.sampleGroups(
          batch.map((p) => p.prompt),
          n,
          sampling,
          rng,
        );
      else results = batch.map((p) => this.policy.sampleGroup(p.prompt, n, sampling, rng));
      this.stats.batches++;
      this.stats.prompts += batch.length;
      batch.forEach((p, i) => p.resolve(results[i]));
    } catch (error) {
      for (const p of batch) p.reject(error);
    }
  }
}
