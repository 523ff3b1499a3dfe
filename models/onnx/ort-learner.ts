// The built-in model's Learner on ONNX Runtime: the LoRA gradients of a loss of
// the completion log-probabilities, computed in three parts (issue 17's learner):
//   1. the log-probs (and entropies when asked) by an ORT forward pass: the training graph's forward alone, so they are
//      the log-probs of the very forward that step 3 differentiates;
//   2. the loss value and g = dLoss/dlogp in tfjs, on those small [B, L] tensors, with the caller's own loss function,
//      so every loss type and option of trainer/loss/loss.ts works unchanged (the loss depends on the parameters only
//      through the log-probs);
//   3. per prompt group, one run of the training graph (builtin-train-graph.ts: forward + backward) that returns the
//      gradient of Σ g · logp with respect to every LoRA A and B, which by the chain rule is dLoss/dθ.
// The tfjs variables stay the parameters: AdamW updates them and checkpoints save them; their values are fed to ORT
// on every call, so no session is rebuilt after an update. Everything else of the Learner contract (tfjs
// tokenLogProbs, adapters, saving) is the wrapped BuiltinPolicy's.
// Layout: lossGradientsSum takes all of a pass's chunks at once and returns their losses and the sum of their
// gradients, so one run per prompt group (a prompt and its completions over every chunk), the prompt computed once
// per pass whatever chunks the caller cuts (the GRPO loop's learner chunks are a tfjs memory bound: its chess chunks
// of 3 sequences had the prompt run 13 times a pass for 4 groups).
// Several cores (worker-pool.ts's rule: `threads` ≥ 2 on the CPU): the group runs of steps 1 and 3 are spread over
// sessions of one thread each (the main thread's and workers'); step 2 runs for the chunks in their order, and the
// gradients are summed over the groups in order, so the result does not depend on which session ran what.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../core/rng.ts';
import type {
  LogProbLoss,
  LossGradients,
  LossRequest,
  Learner,
  LoraSettings,
  SummedLossGradients,
} from '../learner.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from '../types.ts';
import { BuiltinPolicy } from '../builtin/policy.ts';
import { HfPolicy } from '../hf/policy.ts';
import { HfOrtLearner } from './hf-ort-learner.ts';
import type { Policy } from '../policy.ts';
import { UserError } from '../../core/errors.ts';
import type { LoraAdapter } from '../builtin/lora.ts';
import type { Projection } from '../builtin/weights.ts';
import { headDim, patchDim, patchesPerImage } from '../builtin/config.ts';
import { NEG, ropeValues } from '../builtin/transformer.ts';
import { packPrompts } from '../builtin/sampling.ts';
import { loraSpec } from './builtin-graph.ts';
import { buildBuiltinTrainGraph, gradName, QUERY_BLOCKS, trainLoraName } from './builtin-train-graph.ts';
import { OrtSession, floatTensor, int64Tensor, type Feeds } from './session.ts';
import { logpLossAndGradient } from './logp-loss.ts';
import {
  executorCount,
  MIN_JOBS_WORK,
  ortWorkers,
  RemoteSession,
  runJobs,
  splitAlways,
  type OrtWorker,
} from './worker-pool.ts';
import type { Device } from './device.ts';

export interface OrtLearnerOptions {
  /** ORT intra-op threads (default: every core). */
  threads?: number;
  /** Idle intra-op threads spin (models/onnx/session.ts; default off). */
  spin?: boolean;
  /**
   * Spread the runs over `threads` sessions of one thread each when threads ≥ 2 and the work is large enough (default
   * true; see worker-pool.ts); 'always': whatever its size (tests on tiny models).
   */
  parallel?: boolean | 'always';
  /** Execution provider (default the CPU; models/onnx/device.ts): one session, no split, on a GPU. */
  device?: Device;
}

type Remote = { worker: OrtWorker; score: RemoteSession; train: RemoteSession };
type Sessions = {
  key: string;
  executors: number;
  options: { threads?: number; spin?: boolean; label: string };
  graphs: { score: Uint8Array; train: Uint8Array };
  /** The main thread's sessions, opened on first use. */
  score: OrtSession | null;
  train: OrtSession | null;
  remote: Remote[] | null;
};

/** The LoRA settings a training graph was built for, as a key. */
const loraKey = (policy: BuiltinPolicy): string => {
  const l = policy.lora!;
  return `${l.config.r}:${l.scale}:${l.config.targetModules.join(',')}`;
};

export class OrtLearner implements Learner {
  readonly adapterFiles: readonly string[];
  private sessions: Sessions | null = null;
  private params: number | undefined;

  constructor(
    readonly policy: BuiltinPolicy,
    private readonly options: OrtLearnerOptions = {},
  ) {
    this.adapterFiles = policy.adapterFiles;
  }

  tokenLogProbs(batch: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    return this.policy.tokenLogProbs(batch, options);
  }
  trainableVariables(scope: 'lora' | 'base'): tf.Variable[] {
    return this.policy.trainableVariables(scope);
  }
  attachLora(settings: LoraSettings, rng: Rng): void {
    this.policy.attachLora(settings, rng);
  }
  saveAdapter(dir: string, options?: { baseModel?: string }): void {
    this.policy.saveAdapter(dir, options);
  }
  loadAdapter(dir: string): LoraSettings {
    return this.policy.loadAdapter(dir);
  }

  open(): void {
    this.session();
  }

  /** The scoring and training sessions for the policy's current LoRA settings (built on first use and on a change). */
  private session(): Sessions {
    const key = loraKey(this.policy);
    if (this.sessions?.key !== key) {
      this.dispose();
      const spec = { arch: this.policy.arch, lora: loraSpec(this.policy.lora!.config) };
      const executors = executorCount(
        this.options.threads,
        this.options.device ?? 'cpu',
        this.options.parallel !== false,
      );
      const options = {
        threads: executors > 1 ? 1 : this.options.threads,
        spin: this.options.spin,
        device: this.options.device,
        label: 'built-in model training',
      };
      const graphs = {
        score: buildBuiltinTrainGraph(spec, this.policy.weights, { gradients: false }),
        train: buildBuiltinTrainGraph(spec, this.policy.weights, { gradients: true }),
      };
      this.sessions = { key, executors, options, graphs, score: null, train: null, remote: null };
    }
    return this.sessions;
  }

  /** The main thread's session of the scoring or the whole training graph. */
  private local(which: 'score' | 'train'): OrtSession {
    const sessions = this.session();
    return (sessions[which] ??= new OrtSession(sessions.graphs[which], sessions.options));
  }

  /** The workers' sessions, opened on first use (not waited for). */
  private remotes(sessions: Sessions): Remote[] {
    const options = { threads: 1, spin: this.options.spin, label: 'built-in model training' };
    sessions.remote ??= ortWorkers(sessions.executors - 1).map((worker) => ({
      worker,
      score: new RemoteSession(worker, sessions.graphs.score, options),
      train: new RemoteSession(worker, sessions.graphs.train, options),
    }));
    return sessions.remote;
  }

  /**
   * `run` of every feed set on the sessions `which` (the main thread's and the workers'), results in feed order; each
   * feed set is built when its run is handed out, so the main thread builds the next while a worker runs.
   */
  private runAll(which: 'score' | 'train', feeds: (() => Feeds)[], outputs: string[], work: number): Feeds[] {
    const sessions = this.session();
    const split =
      sessions.executors > 1 && feeds.length > 1 && (splitAlways(this.options.parallel) || work >= MIN_JOBS_WORK);
    const remote = split ? this.remotes(sessions) : [];
    const remoteOf = new Map(remote.map((r) => [r.worker, r[which]]));
    return runJobs(feeds, {
      workers: remote.map((r) => r.worker),
      local: (f) => this.local(which).run(f(), outputs),
      remote: (worker, f) => remoteOf.get(worker)!.start(f(), outputs),
      collect: (worker) => remoteOf.get(worker)!.wait(),
    });
  }

  lossGradients(
    batch: SequenceBatchItem[],
    options: TokenLogProbsOptions,
    loss: LogProbLoss,
    variables: tf.Variable[],
  ): LossGradients {
    const { values, grads } = this.lossGradientsSum([{ batch, options, loss }], variables);
    return { value: values[0], grads };
  }

  /** The losses of the requests (chunks), evaluated in request order, and the gradient of their sum. */
  lossGradientsSum(requests: LossRequest[], variables: tf.Variable[]): SummedLossGradients {
    const lora = this.policy.lora;
    if (!lora || requests.some((r) => !r.options.useLora))
      throw new Error('the ONNX Runtime learner differentiates LoRA adapters: attach them and score with useLora');
    // Which graph param each variable is.
    const paramOf = new Map<string, string>();
    lora.layers.forEach((adapters, i) => {
      for (const [p, adapter] of Object.entries(adapters) as [Projection, LoraAdapter][]) {
        paramOf.set(adapter.a.name, trainLoraName(i, p, 'a'));
        paramOf.set(adapter.b.name, trainLoraName(i, p, 'b'));
      }
    });
    for (const v of variables)
      if (!paramOf.has(v.name))
        throw new Error(`the ONNX Runtime learner has no gradient for ${v.name} (LoRA adapters only)`);

    for (const { batch } of requests) {
      for (const it of batch) {
        if (it.prompt.tokens.length + it.completion.length > this.policy.arch.maxContext) {
          throw new UserError(
            `a prompt of ${it.prompt.tokens.length} tokens plus ${it.completion.length} new tokens exceeds the model's context of ${this.policy.arch.maxContext} tokens`,
          );
        }
      }
    }
    const loraFeeds: Feeds = {};
    lora.layers.forEach((adapters, i) => {
      for (const [p, adapter] of Object.entries(adapters) as [Projection, LoraAdapter][]) {
        loraFeeds[trainLoraName(i, p, 'a')] = floatTensor(adapter.a.dataSync() as Float32Array, adapter.a.shape);
        loraFeeds[trainLoraName(i, p, 'b')] = floatTensor(adapter.b.dataSync() as Float32Array, adapter.b.shape);
      }
    });
    const V = this.policy.arch.vocabSize;
    const temperatures = requests.map(({ options }) => {
      const T = options.temperature ?? 1;
      if (!(T > 0)) throw new Error(`temperature must be positive, got ${T}`);
      return T;
    });
    const shapes = requests.map(({ batch }) => ({
      B: batch.length,
      L: Math.max(0, ...batch.map((it) => it.completion.length)),
    }));
    // Jobs: one per prompt group (a prompt and a temperature) over all the requests, so a group whose completions fall
    // in several chunks runs its prompt once a pass; members in request order. A group's feeds are built when its
    // first run is handed out (the main thread builds them while a worker runs).
    const byGroup = new Map<EncodedPrompt, Map<number, { r: number; b: number }[]>>();
    requests.forEach(({ batch }, r) =>
      batch.forEach((item, b) => {
        const byT = byGroup.get(item.prompt) ?? byGroup.set(item.prompt, new Map()).get(item.prompt)!;
        const members = byT.get(temperatures[r]) ?? byT.set(temperatures[r], []).get(temperatures[r])!;
        members.push({ r, b });
      }),
    );
    const jobs = [...byGroup].flatMap(([prompt, byT]) =>
      [...byT].flatMap(([T, members]) => {
        const completions = members.map(({ r, b }) => requests[r].batch[b].completion);
        if (completions.every((c) => c.length === 0)) return [];
        let built: NonNullable<ReturnType<OrtLearner['groupLayout']>> | null = null;
        return [{ members, layout: () => (built ??= this.groupLayout(prompt, completions, T)!) }];
      }),
    );
    // Token positions × parameters: whether the runs are worth spreading (worker-pool.ts MIN_JOBS_WORK).
    this.params ??= this.policy.parameterCount;
    const work =
      requests.reduce(
        (t, { batch }) => t + batch.reduce((u, it) => u + it.prompt.tokens.length + it.completion.length, 0),
        0,
      ) * this.params;

    const lps = shapes.map(({ B, L }) => ({
      logp: new Float32Array(B * L),
      entropy: new Float32Array(B * L),
      mask: new Float32Array(B * L),
    }));
    /** A job's log-probs (and entropies) from its forward's log_probs [N, V] into its requests' [B, L] arrays. */
    const scoreJob = (k: number, rows: Float32Array) => {
      const { members, layout: lazy } = jobs[k];
      const layout = lazy();
      members.forEach(({ r, b }, m) => {
        const { L } = shapes[r];
        const { logp, entropy, mask } = lps[r];
        requests[r].batch[b].completion.forEach((t, j) => {
          const o = layout.rowOf(m, j) * V;
          logp[b * L + j] = rows[o + t];
          mask[b * L + j] = 1;
          if (requests[r].options.withEntropy) {
            let h = 0;
            for (let v = 0; v < V; v++) h -= Math.exp(rows[o + v]) * rows[o + v];
            entropy[b * L + j] = h;
          }
        });
      });
    };
    /** A request's loss and g = dLoss/dlogp, in tfjs. */
    const lossOf = (r: number) => logpLossAndGradient(lps[r], shapes[r], requests[r].options, requests[r].loss);
    /** A job's target_weights [N, V]: g at each completion token's (row, id). */
    const targetOf = (k: number, losses: { g: Float32Array }[]) => {
      const { members, layout: lazy } = jobs[k];
      const layout = lazy();
      const target = new Float32Array(layout.rows * V);
      members.forEach(({ r, b }, m) => {
        const { L } = shapes[r];
        const { g } = losses[r];
        requests[r].batch[b].completion.forEach((t, j) => (target[layout.rowOf(m, j) * V + t] += g[b * L + j]));
      });
      return floatTensor(target, [layout.rows, V]);
    };
    const wanted = variables.map((v) => gradName(paramOf.get(v.name)!));
    const sums = new Map<string, Float32Array>();
    const add = (grads: Feeds) => {
      for (const name of wanted) {
        const data = grads[name].data as Float32Array;
        const sum = sums.get(name);
        if (sum) for (let i = 0; i < data.length; i++) sum[i] += data[i];
        else sums.set(name, Float32Array.from(data));
      }
    };

    // 1. Every job's forward (the scoring graph), 2. the losses in request order, 3. every job's forward + backward (the
    // training graph), the gradients summed in job order; steps 1 and 3 spread over the sessions.
    const scored = this.runAll(
      'score',
      jobs.map(({ layout }) => () => ({ ...layout().feeds, ...loraFeeds })),
      ['log_probs'],
      work,
    );
    scored.forEach((out, k) => scoreJob(k, out.log_probs.data as Float32Array));
    const losses = requests.map((_, r) => lossOf(r));
    const trained = this.runAll(
      'train',
      jobs.map(({ layout }, k) => () => ({ ...layout().feeds, ...loraFeeds, target_weights: targetOf(k, losses) })),
      wanted,
      work,
    );
    trained.forEach(add);
    const grads: tf.NamedTensorMap = {};
    for (const v of variables) {
      const sum = sums.get(gradName(paramOf.get(v.name)!));
      grads[v.name] = sum ? tf.tensor(sum, v.shape) : tf.zerosLike(v);
    }
    return { values: losses.map(({ value }) => value), grads };
  }

  /**
   * The graph feeds of one prompt and its completions (all but target_weights), the packed row count and the row whose
   * logits predict completion m's token j; null when every completion is empty.
   */
  private groupLayout(
    prompt: EncodedPrompt,
    completions: number[][],
    temperature: number,
  ): { feeds: Feeds; rows: number; rowOf: (m: number, j: number) => number } | null {
    const { arch, tokenizer } = this.policy;
    const V = arch.vocabSize;
    const H = arch.nHeads;
    const dh = headDim(arch);
    const Lu = Math.max(...completions.map((c) => c.length));
    if (Lu === 0) return null;
    const P = prompt.tokens.length;
    const G = completions.length;
    // Completion tokens 0 … Lu-2 are inputs (scoring.ts's layout); at least a row per query block of the graph, so no
    // dimension is zero. Block i holds rows blockEnds[i-1] … blockEnds[i]-1.
    const Cn = Math.max(QUERY_BLOCKS, Lu - 1);
    const blockEnds = Array.from({ length: QUERY_BLOCKS }, (_, i) => Math.round((Cn * (i + 1)) / QUERY_BLOCKS));
    const N = P + G * Cn;
    const { batch, ends } = packPrompts(this.policy, tokenizer, [prompt]);
    const tokens = new Int32Array(N);
    const positions = new Int32Array(N);
    tokens.set(batch.tokens);
    positions.set(batch.positions);
    completions.forEach((completion, m) => {
      const cursor = ends[0].clone();
      for (let j = 0; j < Cn; j++) {
        const row = P + m * Cn + j;
        tokens[row] = j < completion.length - 1 ? completion[j] : tokenizer.pad;
        positions[row] = cursor.push(tokens[row]);
      }
      for (const t of completion)
        if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
    });
    // Image patches: distinct images projected once, each patch row placed by index (0 = none).
    const p = patchesPerImage(arch);
    const patchIndex = new Int32Array(N);
    for (const slot of batch.slots) for (let j = 0; j < p; j++) patchIndex[slot.start + j] = 1 + slot.image * p + j;
    const patchCount = Math.max(1, batch.images.length * p);
    const pixels = new Float32Array(patchCount * patchDim(arch));
    batch.images.forEach((im, i) => pixels.set(im, i * p * patchDim(arch)));
    const { cos, sin } = ropeValues(arch, positions);
    const promptMask = new Float32Array(P * P).fill(NEG);
    for (let i = 0; i < P; i++) promptMask.fill(0, i * P, i * P + i + 1);
    // Completion row i sees the prompt and its own rows 0 … i; a query block ending at row e has keys P + e.
    const starts = [0, ...blockEnds.slice(0, -1)];
    const blockMask = (from: number, rows: number, K: number) => {
      const mask = new Float32Array(rows * K).fill(NEG);
      for (let i = 0; i < rows; i++) mask.fill(0, i * K, i * K + P + from + i + 1);
      return floatTensor(mask, [rows, K]);
    };
    const feeds: Feeds = {
      input_ids: int64Tensor(tokens, [N]),
      patch_pixels: floatTensor(pixels, [patchCount, patchDim(arch)]),
      patch_slots: int64Tensor(
        Int32Array.from({ length: patchCount }, (_, i) => i % p),
        [patchCount],
      ),
      patch_index: int64Tensor(patchIndex, [N]),
      rope_cos: floatTensor(cos, [N, arch.dModel]),
      rope_sin: floatTensor(sin, [N, arch.dModel]),
      prompt_mask: floatTensor(promptMask, [P, P]),
      ...Object.fromEntries(
        blockEnds.map((end, i) => [`completion_mask.${i}`, blockMask(starts[i], end - starts[i], P + end)]),
      ),
      ...Object.fromEntries(
        blockEnds.slice(0, -1).map((end, i) => [`key_splits.${i}`, int64Tensor([P + end, Cn - end], [2])]),
      ),
      query_splits: int64Tensor(
        blockEnds.map((end, i) => end - starts[i]),
        [QUERY_BLOCKS],
      ),
      row_splits: int64Tensor([P, G * Cn], [2]),
      score_splits: int64Tensor([P, Cn], [2]),
      'shape.g_c_h_dh': int64Tensor([G, Cn, H, dh], [4]),
      'shape.g_1_1_1': int64Tensor([G, 1, 1, 1], [4]),
      inv_temperature: floatTensor(Float32Array.of(1 / temperature), []),
    };
    // Token 0 is predicted by the prompt's last row, token j ≥ 1 by completion row j − 1.
    return { feeds, rows: N, rowOf: (m, j) => (j === 0 ? P - 1 : P + m * Cn + j - 1) };
  }

  /** Releases the ORT sessions; the wrapped policy stays its owner's to dispose. */
  dispose(): void {
    this.sessions?.score?.dispose();
    this.sessions?.train?.dispose();
    for (const r of this.sessions?.remote ?? []) {
      r.score.dispose();
      r.train.dispose();
    }
    this.sessions = null;
  }
}

/** The ORT learner of a policy: the built-in model's, or a Hugging Face checkpoint's (hf-ort-learner.ts). */
export function ortLearner(policy: Policy, options: OrtLearnerOptions = {}): Learner {
  if (policy instanceof HfPolicy)
    return new HfOrtLearner(policy, { threads: options.threads, spin: options.spin, device: options.device });
  if (!(policy instanceof BuiltinPolicy))
    throw new UserError(
      `engine ort: the ONNX Runtime learner has no graph for ${policy.constructor.name}; use engine tfjs`,
    );
  return new OrtLearner(policy, options);
}
