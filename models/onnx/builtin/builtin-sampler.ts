// A Sampler (models/sampler.ts) for the built-in model on ONNX Runtime: rollouts
// with KV-cache decoding (each prompt prefilled once, all prompts in one batch, its G completions attending to its
// cache together), greedy and sampled draws through models/token-sampling.ts in the same row order and with the same
// Rng draws as the tfjs sampler (models/builtin/sampling.ts), and no-grad completion log-probabilities (reference and
// old policy). The prompt format, tokenizer and limits are the wrapped BuiltinPolicy's; it stays the Learner.
// After each learner update the trainer calls syncLora() (the adapters are graph inputs: no rebuild).
// Several cores (worker-pool.ts's rule: `threads` ≥ 2 on the CPU): the prompts of a rollout are split into contiguous
// parts, one per session (the main thread's and a worker's each, one intra-op thread); each part prefills, draws and
// decodes its own rows on its own, taking its draws from the rollout's Rng stream where the single session takes them
// (rollout-part.ts, rollout-board.ts), so the samples do not change and the parts never wait for each other's decode.
// Scoring (tokenLogProbsMany) spreads its (chunk, prompt) pieces over the sessions as jobs.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../../core/rng.ts';
import { UserError } from '../../../core/errors.ts';
import type { Sampler } from '../../sampler.ts';
import { PolicyFront } from '../policy-front.ts';
import { scoreToken } from '../../token-sampling.ts';
import type {
  Completion,
  EncodedPrompt,
  SamplingOptions,
  SequenceBatchItem,
  TokenLogProbs,
  TokenLogProbsOptions,
} from '../../types.ts';
import type { BuiltinPolicy } from '../../builtin/policy.ts';
import { packPrompts } from '../../builtin/sampling.ts';
import { completionsOf, RowDraws, type DrawnRows } from '../../builtin/row-draws.ts';
import type { PositionCursor } from '../../builtin/positions.ts';
import { BuiltinOrtModel, type PatchSlot } from './builtin-session.ts';
import type { Device } from '../device.ts';
import { RolloutPart, type PartPlan, type PartPrompts } from './rollout-part.ts';
import { RolloutBoard } from './rollout-board.ts';
import {
  executorCount,
  MIN_JOBS_WORK,
  MIN_STEP_WORK,
  ortWorkers,
  runJobs,
  splitAlways,
  workerObjectId,
  type OrtWorker,
} from './worker-pool.ts';

export interface BuiltinOrtSamplerOptions {
  /** ORT intra-op threads (default: every core). */
  threads?: number;
  /** Idle intra-op threads spin (see models/onnx/session.ts; default off). */
  spin?: boolean;
  /** Execution provider (default the CPU; models/onnx/device.ts). */
  device?: Device;
  /**
   * Split rollouts and scoring over `threads` sessions of one thread each (the main thread's and workers'), when
   * threads ≥ 2 on the CPU and the work is large enough (worker-pool.ts; default true); 'always': whatever its size
   * (tests on tiny models); false: one session with `threads` intra-op threads.
   */
  parallel?: boolean | 'always';
}

/** A copy of the model in a worker: its model and rollout part ids. */
interface RemoteModel {
  worker: OrtWorker;
  model: number;
  part: number;
}

/** Prompts padded to their longest and run as one batch: tokens, positions, patch slots, end cursors, lengths. */
interface PaddedPrompts {
  count: number;
  length: number;
  tokens: Int32Array;
  positions: Int32Array;
  slots: PatchSlot[];
  ends: PositionCursor[];
  lengths: number[];
}

export class BuiltinOrtSampler extends PolicyFront<BuiltinPolicy> implements Sampler {
  readonly model: BuiltinOrtModel;

  private readonly part: RolloutPart;
  /** Sessions in all (the main thread's and workers'), and the workers' copies once a call has needed them. */
  readonly executors: number;
  private remoteModels: RemoteModel[] | null = null;
  private readonly always: boolean;
  private readonly spin?: boolean;
  private readonly params: number;

  constructor(policy: BuiltinPolicy, options: BuiltinOrtSamplerOptions = {}) {
    super(policy);
    this.executors = executorCount(options.threads, options.device, options.parallel !== false);
    this.always = splitAlways(options.parallel);
    this.spin = options.spin;
    this.params = policy.parameterCount;
    this.model = new BuiltinOrtModel(policy, this.executors > 1 ? { ...options, threads: 1 } : options);
    this.part = new RolloutPart(this.model);
  }

  /** The workers' copies of the model, started on first use (graph bytes and the adapters fed here sent, not waited for). */
  private get remotes(): RemoteModel[] {
    if (!this.remoteModels) {
      this.remoteModels = ortWorkers(this.executors - 1).map((worker) => {
        const remote = { worker, model: workerObjectId(), part: workerObjectId() };
        worker.setup({
          op: 'model',
          id: remote.model,
          model: this.model.prebuilt,
          options: { threads: 1, spin: this.spin },
        });
        worker.setup({ op: 'part', id: remote.part, model: remote.model });
        if (this.model.lora) worker.setup({ op: 'lora', id: remote.model, values: this.model.lora });
        return remote;
      });
    }
    return this.remoteModels;
  }

  /** How many sessions share work that splits into `pieces` at most, each share's work (tokens × parameters) `share(n)`. */
  private sharing(pieces: number, share: (n: number) => number, least: number): number {
    const n = Math.min(this.executors, pieces);
    return n > 1 && (this.always || share(n) >= least) ? n : 1;
  }

  /** Read the learner's current adapters (call after every update). */
  syncLora(): void {
    if (!this.policy.lora) return;
    const values = this.model.loraValues(this.policy.lora);
    this.model.setLora(values);
    for (const r of this.remoteModels ?? []) r.worker.setup({ op: 'lora', id: r.model, values });
  }

  private checkLength(promptTokens: number, newTokens: number): void {
    if (promptTokens + newTokens > this.policy.arch.maxContext) {
      throw new UserError(
        `a prompt of ${promptTokens} tokens plus ${newTokens} new tokens exceeds the model's context of ${this.policy.arch.maxContext} tokens`,
      );
    }
  }

  /** Prompts right-padded to the longest, positions and image slots exactly as packPrompts gives them. */
  private padPrompts(prompts: EncodedPrompt[]): PaddedPrompts {
    const { batch, starts, ends } = packPrompts(this.policy, this.policy.tokenizer, prompts);
    const lengths = prompts.map((p) => p.tokens.length);
    const P = Math.max(...lengths);
    const tokens = new Int32Array(prompts.length * P).fill(this.policy.tokenizer.pad);
    const positions = new Int32Array(prompts.length * P);
    prompts.forEach((_, u) => {
      tokens.set(batch.tokens.subarray(starts[u], starts[u] + lengths[u]), u * P);
      positions.set(batch.positions.subarray(starts[u], starts[u] + lengths[u]), u * P);
    });
    const slots: PatchSlot[] = batch.slots.map((slot) => {
      let u = 0;
      while (u + 1 < starts.length && starts[u + 1] <= slot.start) u++;
      return { row: u, start: slot.start - starts[u], image: batch.images[slot.image] };
    });
    return { count: prompts.length, length: P, tokens, positions, slots, ends, lengths };
  }

  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[] {
    return this.sampleGroups([prompt], group, options, rng)[0];
  }

  sampleGroups(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][] {
    for (const p of prompts) this.checkLength(p.tokens.length, options.maxNewTokens);
    const U = prompts.length;
    const rows = U * group;
    const padded = this.padPrompts(prompts);
    // Contiguous parts of the prompts (so of the rows u·G + g), the first on the main thread, the others in workers.
    const n = this.sharing(U, (k) => (rows / k) * this.params, MIN_STEP_WORK);
    return n === 1
      ? this.sampleOnePart(prompts, padded, group, options, rng)
      : this.sampleParts(prompts, padded, group, options, rng, n);
  }

  /** The rollout on the main thread's session alone: draw every row, decode them all, step by step. */
  private sampleOnePart(
    prompts: EncodedPrompt[],
    padded: PaddedPrompts,
    group: number,
    options: SamplingOptions,
    rng: Rng,
  ): Completion[][] {
    const { tokenizer } = this.policy;
    const rows = prompts.length * group;
    const draws = new RowDraws(rows, tokenizer);
    const cursors = Array.from({ length: rows }, (_, r) => padded.ends[Math.floor(r / group)].clone());
    this.part.decode(
      padded,
      group,
      options.maxNewTokens,
      cursors,
      (rowLogits) => draws.step(rowLogits, options, rng),
      () => draws.allFinished(),
    );
    return draws.completions(prompts.length, group, tokenizer);
  }

  /**
   * The rollout split into `n` parts of contiguous prompts: each part (the first on the main thread, the others in
   * workers) prefills, draws and decodes its own rows (RolloutPart.rollout), meeting the others only on the shared
   * board; the rows' draws come out as the single session's, and `rng` ends where the single session leaves it.
   */
  private sampleParts(
    prompts: EncodedPrompt[],
    padded: PaddedPrompts,
    group: number,
    options: SamplingOptions,
    rng: Rng,
    n: number,
  ): Completion[][] {
    const { arch, tokenizer } = this.policy;
    const U = prompts.length;
    const P = padded.length;
    const bounds = Array.from({ length: n + 1 }, (_, k) => Math.floor((k * U) / n));
    const rowCounts = Array.from({ length: n }, (_, k) => (bounds[k + 1] - bounds[k]) * group);
    const board = RolloutBoard.create(rowCounts, options.maxNewTokens);
    const texts = Array.from({ length: arch.vocabSize }, (_, id) => tokenizer.decode([id]));
    const newline = padded.ends[0].newline;
    const part = (k: number): { prompts: PartPrompts; plan: PartPlan } => {
      const [u0, u1] = [bounds[k], bounds[k + 1]];
      return {
        prompts: {
          count: u1 - u0,
          length: P,
          tokens: padded.tokens.slice(u0 * P, u1 * P),
          positions: padded.positions.slice(u0 * P, u1 * P),
          slots: padded.slots.filter((s) => s.row >= u0 && s.row < u1).map((s) => ({ ...s, row: s.row - u0 })),
          lengths: padded.lengths.slice(u0, u1),
        },
        plan: {
          index: k,
          rows: rowCounts,
          group,
          options: {
            temperature: options.temperature,
            topP: options.topP,
            maxNewTokens: options.maxNewTokens,
            topLogProbs: options.topLogProbs,
          },
          rng: rng.state(),
          tokens: {
            pad: tokenizer.pad,
            bos: tokenizer.bos,
            eos: tokenizer.eos,
            img: tokenizer.img,
            unk: tokenizer.unk,
          },
          positions: { scheme: arch.positions, newline, texts, ends: padded.ends.slice(u0, u1).map((c) => c.state()) },
          board: board.cells,
        },
      };
    };
    const remotes = this.remotes.slice(0, n - 1);
    remotes.forEach((r, i) => r.worker.post({ op: 'partRollout', id: r.part, ...part(i + 1) }));
    let local: DrawnRows | null = null;
    let failure: unknown = null;
    try {
      const own = part(0);
      local = this.part.rollout(own.prompts, own.plan);
    } catch (error) {
      failure = error;
    }
    // Every worker's reply is taken, even after a failure here, so that the channels stay in step.
    const drawn: DrawnRows[] = [];
    for (const r of remotes) {
      try {
        drawn.push(r.worker.receive<DrawnRows>());
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== null) throw failure;
    drawn.unshift(local!);
    for (let i = board.valuesDrawn(options.temperature > 0 ? 1 : 0); i > 0; i--) rng.next();
    const rows: DrawnRows = {
      tokens: drawn.flatMap((d) => d.tokens),
      logProbs: drawn.flatMap((d) => d.logProbs),
      samplingLogProbs: drawn.flatMap((d) => d.samplingLogProbs),
      finished: drawn.flatMap((d) => d.finished),
      ...(drawn.every((d) => d.top) ? { top: drawn.flatMap((d) => d.top!) } : {}),
    };
    return completionsOf(rows, U, group, tokenizer);
  }

  /**
   * Completion log-probabilities without gradients: each distinct prompt prefilled once, its completions then run as
   * one batch attending to its cache (completion tokens 0 … L-2 are inputs, as models/builtin/scoring.ts lays them).
   */
  tokenLogProbs(items: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    return this.tokenLogProbsMany([items], options)[0];
  }

  /**
   * tokenLogProbs of several batches (the trainer's learner chunks) at once: every (batch, prompt) piece is one job,
   * spread over the sessions; each batch's result is what tokenLogProbs gives for it.
   */
  tokenLogProbsMany(batches: SequenceBatchItem[][], options: TokenLogProbsOptions): TokenLogProbs[] {
    for (const items of batches)
      for (const it of items) this.checkLength(it.prompt.tokens.length, it.completion.length);
    const { arch, tokenizer } = this.policy;
    const V = arch.vocabSize;
    const T = options.temperature ?? 1;
    if (!(T > 0)) throw new Error(`temperature must be positive, got ${T}`);
    const useLora = options.useLora && this.model.hasLora;
    type Job = { batch: number; members: number[]; C: number; args: Parameters<BuiltinOrtModel['scoreGroup']> };
    const jobs: Job[] = [];
    batches.forEach((items, batch) => {
      const byPrompt = new Map<EncodedPrompt, number[]>();
      items.forEach((it, b) => byPrompt.set(it.prompt, [...(byPrompt.get(it.prompt) ?? []), b]));
      for (const [prompt, members] of byPrompt) {
        const Lu = Math.max(...members.map((b) => items[b].completion.length));
        if (Lu === 0) continue;
        const padded = this.padPrompts([prompt]);
        const C = Lu - 1;
        const n = members.length;
        const tokens = new Int32Array(n * C).fill(tokenizer.pad);
        const positions = new Int32Array(n * C);
        members.forEach((b, row) => {
          const completion = items[b].completion;
          for (const t of completion)
            if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
          const cursor = padded.ends[0].clone();
          for (let j = 0; j < C; j++) {
            if (j < completion.length - 1) tokens[row * C + j] = completion[j];
            positions[row * C + j] = cursor.push(tokens[row * C + j]);
          }
        });
        const promptPart = {
          tokens: padded.tokens,
          positions: padded.positions,
          slots: padded.slots,
          length: padded.length,
          valid: padded.lengths[0],
        };
        jobs.push({ batch, members, C, args: [promptPart, { n, seq: C, tokens, positions }, useLora] });
      }
    });
    const tokens = jobs.reduce((t, job) => t + job.args[0].length + job.args[1].n * job.args[1].seq, 0);
    const remotes = this.sharing(jobs.length, () => tokens * this.params, MIN_JOBS_WORK) > 1 ? this.remotes : [];
    const results = runJobs(jobs, {
      workers: remotes.map((r) => r.worker),
      local: (job) => this.model.scoreGroup(...job.args),
      remote: (worker, job) =>
        worker.post({ op: 'score', id: remotes.find((r) => r.worker === worker)!.model, args: job.args }),
      collect: (worker) => worker.receive<{ last: Float32Array; rest: Float32Array | null }>(),
    });

    const out = batches.map((items) => {
      const L = Math.max(0, ...items.map((it) => it.completion.length));
      return {
        L,
        logp: new Float32Array(items.length * L),
        entropy: new Float32Array(items.length * L),
        mask: new Float32Array(items.length * L),
      };
    });
    jobs.forEach((job, k) => {
      const { last, rest } = results[k];
      const { L, logp, entropy, mask } = out[job.batch];
      /** log-softmax(row / T) at `target` (and the entropy of that distribution) into slot o. */
      const score = (row: Float32Array, target: number, o: number) => {
        const scored = scoreToken(row, target, T, options.withEntropy ?? false, V);
        logp[o] = scored.logp;
        if (options.withEntropy) entropy[o] = scored.entropy;
      };
      job.members.forEach((b, row) => {
        batches[job.batch][b].completion.forEach((t, j) => {
          const logits = j === 0 ? last : rest!.subarray((row * job.C + j - 1) * V, (row * job.C + j) * V);
          score(logits, t, b * L + j);
          mask[b * L + j] = 1;
        });
      });
    });
    return batches.map((items, i) => ({
      logProbs: tf.tensor2d(out[i].logp, [items.length, out[i].L]),
      mask: tf.tensor2d(out[i].mask, [items.length, out[i].L]),
      ...(options.withEntropy ? { entropy: tf.tensor2d(out[i].entropy, [items.length, out[i].L]) } : {}),
    }));
  }

  dispose(): void {
    for (const r of this.remoteModels ?? []) {
      r.worker.call({ op: 'dispose', id: r.part });
      r.worker.call({ op: 'dispose', id: r.model });
    }
    this.part.finish();
    this.model.dispose();
  }
}
