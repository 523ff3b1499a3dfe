// The built-in model's Learner on ONNX Runtime: the three steps of models/onnx/lora-learner.ts
// over the built-in model's graphs, step 1 the scoring graph (builtin-train-graph.ts without gradients: its log_probs
// [N, V]) and step 3 the training graph (forward + backward of Σ target_weights · log_probs, g placed at each
// completion token's (row, id)). A job is a prompt group (a prompt, a temperature and its completions over every
// chunk of the pass): the prompt is computed once per pass whatever chunks the caller cuts (the GRPO loop's learner
// chunks are a tfjs memory bound: its chess chunks of 3 sequences had the prompt run 13 times a pass for 4 groups).
// Several cores (worker-pool.ts's rule: `threads` ≥ 2 on the CPU): the group runs of steps 1 and 3 are spread over
// sessions of one thread each (the main thread's and workers'); step 2 runs for the chunks in their order, and the
// gradients are summed over the groups in order, so the result does not depend on which session ran what.
import type { LossRequest } from '../../learner.ts';
import type { EncodedPrompt } from '../../types.ts';
import type { BuiltinPolicy } from '../../builtin/policy.ts';
import { UserError } from '../../../core/errors.ts';
import type { LoraAdapter } from '../../builtin/lora.ts';
import type { Projection } from '../../builtin/weights.ts';
import { headDim, patchDim, patchesPerImage } from '../../builtin/config.ts';
import { NEG, ropeValues } from '../../builtin/transformer.ts';
import { packPrompts } from '../../builtin/sampling.ts';
import { loraSpec } from './builtin-graph.ts';
import { buildBuiltinTrainGraph, gradName, QUERY_BLOCKS, trainLoraName } from './builtin-train-graph.ts';
import { OrtSession, floatTensor, int64Tensor, type Feeds } from '../session.ts';
import { OrtLoraLearner, type JobScores, type LearnerJob, type LearnerPass } from '../lora-learner.ts';
import {
  executorCount,
  MIN_JOBS_WORK,
  ortWorkers,
  RemoteSession,
  runJobs,
  splitAlways,
  type OrtWorker,
} from './worker-pool.ts';
import type { Device } from '../device.ts';

export interface BuiltinOrtLearnerOptions {
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

/** A prompt group, its graph feeds built when its first run is handed out (the main thread builds them while a worker runs). */
interface BuiltinJob extends LearnerJob {
  layout: () => GroupLayout;
}

type GroupLayout = { feeds: Feeds; rows: number; rowOf: (m: number, j: number) => number };

export class BuiltinOrtLearner extends OrtLoraLearner<BuiltinPolicy, BuiltinJob> {
  private sessions: Sessions | null = null;
  private params: number | undefined;
  private lora: Feeds = {};

  constructor(
    policy: BuiltinPolicy,
    private readonly options: BuiltinOrtLearnerOptions = {},
  ) {
    super(policy);
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

  /** Which graph param each adapter variable is; the adapters' current values become this pass's feeds. */
  protected paramNames(requests: LossRequest[]): Map<string, string> {
    const lora = this.policy.lora;
    if (!lora || requests.some((r) => !r.options.useLora))
      throw new Error('the ONNX Runtime learner differentiates LoRA adapters: attach them and score with useLora');
    const paramOf = new Map<string, string>();
    this.lora = {};
    lora.layers.forEach((adapters, i) => {
      for (const [p, adapter] of Object.entries(adapters) as [Projection, LoraAdapter][]) {
        paramOf.set(adapter.a.name, trainLoraName(i, p, 'a'));
        paramOf.set(adapter.b.name, trainLoraName(i, p, 'b'));
        this.lora[trainLoraName(i, p, 'a')] = floatTensor(adapter.a.dataSync() as Float32Array, adapter.a.shape);
        this.lora[trainLoraName(i, p, 'b')] = floatTensor(adapter.b.dataSync() as Float32Array, adapter.b.shape);
      }
    });
    return paramOf;
  }

  protected gradName(param: string): string {
    return gradName(param);
  }

  protected vocabSize(): number {
    return this.policy.arch.vocabSize;
  }

  protected checkLength(promptTokens: number, completionTokens: number): void {
    if (promptTokens + completionTokens > this.policy.arch.maxContext) {
      throw new UserError(
        `a prompt of ${promptTokens} tokens plus ${completionTokens} new tokens exceeds the model's context of ${this.policy.arch.maxContext} tokens`,
      );
    }
  }

  /** One job per prompt group (a prompt and a temperature) over all the requests, members in request order. */
  protected jobs({ requests, temperatures }: LearnerPass): BuiltinJob[] {
    const byGroup = new Map<EncodedPrompt, Map<number, { r: number; b: number }[]>>();
    requests.forEach(({ batch }, r) =>
      batch.forEach((item, b) => {
        const byT = byGroup.get(item.prompt) ?? byGroup.set(item.prompt, new Map()).get(item.prompt)!;
        const members = byT.get(temperatures[r]) ?? byT.set(temperatures[r], []).get(temperatures[r])!;
        members.push({ r, b });
      }),
    );
    return [...byGroup].flatMap(([prompt, byT]) =>
      [...byT].flatMap(([temperature, members]) => {
        const completions = members.map(({ r, b }) => requests[r].batch[b].completion);
        if (completions.every((c) => c.length === 0)) return [];
        let built: GroupLayout | null = null;
        return [
          {
            prompt,
            temperature,
            members,
            layout: () => (built ??= this.groupLayout(prompt, completions, temperature)!),
          },
        ];
      }),
    );
  }

  /** Token positions × parameters: whether the runs are worth spreading (worker-pool.ts MIN_JOBS_WORK). */
  private work(requests: LossRequest[]): number {
    this.params ??= this.policy.parameterCount;
    return (
      requests.reduce(
        (t, { batch }) => t + batch.reduce((u, it) => u + it.prompt.tokens.length + it.completion.length, 0),
        0,
      ) * this.params
    );
  }

  /** The scoring graph's log_probs [N, V] of every job: a token's log-prob, and the entropy of its row. */
  protected forward(jobs: BuiltinJob[], { requests }: LearnerPass): JobScores[] {
    const V = this.policy.arch.vocabSize;
    const scored = this.runAll(
      'score',
      jobs.map(({ layout }) => () => ({ ...layout().feeds, ...this.lora })),
      ['log_probs'],
      this.work(requests),
    );
    return scored.map((out, k) => {
      const rows = out.log_probs.data as Float32Array;
      const { members, layout } = jobs[k];
      const completion = (m: number) => requests[members[m].r].batch[members[m].b].completion;
      return {
        logp: (m, j) => rows[layout().rowOf(m, j) * V + completion(m)[j]],
        entropy: (m, j) => {
          const o = layout().rowOf(m, j) * V;
          let h = 0;
          for (let v = 0; v < V; v++) h -= Math.exp(rows[o + v]) * rows[o + v];
          return h;
        },
      };
    });
  }

  /** The training graph of every job, fed target_weights [N, V]: g at each completion token's (row, id). */
  protected backward(
    jobs: BuiltinJob[],
    { requests }: LearnerPass,
    g: (k: number, m: number, j: number) => number,
    wanted: string[],
  ): Feeds[] {
    const V = this.policy.arch.vocabSize;
    const targetOf = (k: number) => {
      const { members, layout: lazy } = jobs[k];
      const layout = lazy();
      const target = new Float32Array(layout.rows * V);
      members.forEach(({ r, b }, m) => {
        requests[r].batch[b].completion.forEach((t, j) => (target[layout.rowOf(m, j) * V + t] += g(k, m, j)));
      });
      return floatTensor(target, [layout.rows, V]);
    };
    return this.runAll(
      'train',
      jobs.map(({ layout }, k) => () => ({ ...layout().feeds, ...this.lora, target_weights: targetOf(k) })),
      wanted,
      this.work(requests),
    );
  }

  /**
   * The graph feeds of one prompt and its completions (all but target_weights), the packed row count and the row whose
   * logits predict completion m's token j; null when every completion is empty.
   */
  private groupLayout(prompt: EncodedPrompt, completions: number[][], temperature: number): GroupLayout | null {
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
