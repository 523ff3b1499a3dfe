// A Hugging Face checkpoint's Learner on ONNX Runtime: the three steps of models/onnx/lora-learner.ts over the
// training graph (hf-train-graph.ts):
//   1. its forward branch: the token log-probs and entropies, and each layer's input hidden state ([N, H] per layer,
//      kept until step 3);
//   3. its gradient branch, which recomputes each layer from its kept input and differentiates it (last layer first),
//      returning the gradient of Σ g · logp with respect to every LoRA A and B. The same work as a forward then a
//      forward + backward, with one layer's activations alive at a time (measured: docs/performance.md, "One GRPO step
//      against PyTorch eager").
// One session serves both passes (its graph's If node picks the branch), without weight prepacking: it holds no weights
// of its own (it maps the decoder's shared weight file, weight-file.ts, as the sampler's session does). ORT's memory
// arena stays on: without it every buffer of a run is fresh memory from the system, and first-touch page faults on a
// long prompt's [kv heads, rep·P, P] scores made each elementwise pass over them several times slower
// (docs/engines.md, "One session", has the measurement).
// Jobs: a prompt group whose completions fall in several chunks runs its prompt once; a group is cut into parts only
// where its [predicted tokens, vocabulary] logits would pass LOGIT_BUDGET (each part runs the prompt again).
import * as tf from '@tensorflow/tfjs';
import { Tensor } from 'onnxruntime-common';
import { UserError } from '../../../core/errors.ts';
import type { HfPolicy } from '../../hf/policy.ts';
import { maskValues } from '../../layers/attention.ts';
import { mropeValues } from '../../layers/mrope.ts';
import { inverseFrequencies, ropeValues } from '../../layers/rope.ts';
import type { LossRequest } from '../../learner.ts';
import type { SequenceBatchItem } from '../../types.ts';
import type { Device } from '../device.ts';
import {
  buildHfTrainGraph,
  hfGradName,
  hfHiddenName,
  hfTrainLoraName,
  type HfTrainLoraSpec,
} from './hf-train-graph.ts';
import { OrtSession, floatTensor, int64Tensor, type Feeds } from '../session.ts';
import { weightFileOf } from '../weight-file.ts';
import { deviceWeightDtype } from '../weight-dtype.ts';
import type { WeightDtype } from '../weight-encoding.ts';
import { OrtLoraLearner, type JobScores, type LearnerJob, type LearnerPass } from '../lora-learner.ts';

/** Most [predicted tokens × vocabulary] logit values one run holds (2^25 floats: 128 MB a tensor). */
const LOGIT_BUDGET = 2 ** 25;
/** What the training graph lacks (hf-train-graph.ts refuses it too). */
export const ATTENTION_SOFTCAP =
  'engine ort: the ONNX Runtime learner has no attention soft-capping (attn_logit_softcapping); use --engine tfjs for this checkpoint';
const WITH_GRADIENTS = new Tensor('bool', [true], []);
const NO_GRADIENTS = new Tensor('bool', [false], []);
/** The additive mask value of a blocked key (layers/attention.ts's). */
const MASKED = -1e9;

export interface HfOrtLearnerOptions {
  /** ORT intra-op threads (default: every core). */
  threads?: number;
  spin?: boolean;
  device?: Device;
  /** Most logit values one run holds (default LOGIT_BUDGET; tests make it small to exercise the parts). */
  logitBudget?: number;
  /**
   * Tests: weight bytes past which the graph keeps them in an external data file of its own. Unset, the weights are
   * the decoder's shared weight file (weight-file.ts), which ORT maps rather than copies and the sampler's session
   * maps too: file-backed pages (reclaimable) held once, not the protobuf's bytes plus ORT's copy per session.
   */
  maxInlineBytes?: number;
  /** The weights' stored type (default: deviceWeightDtype of the checkpoint's dtype and the device; tests set it). */
  stored?: WeightDtype;
  /** Tests: logits one chunk of the training graph's output head holds (default hf-train-head.ts CHUNK_LOGITS). */
  headChunkLogits?: number;
}

/** One run of the graphs: a prompt and some of its completions (members: their request and batch index). */
type Part = LearnerJob;

interface PartLayout {
  feeds: Feeds;
  /** Predicted tokens in member order, then token order: their (member, j). */
  tokens: { m: number; j: number }[];
  /** Where member m's tokens start in that order. */
  index: number[];
  /** The layers' input hidden states the forward branch returned, until the gradient branch reads them. */
  kept?: Feeds;
}

export class HfOrtLearner extends OrtLoraLearner<HfPolicy, Part> {
  private sessions: { key: string; session: OrtSession } | null = null;
  private readonly invGlobal: Float32Array;
  private readonly invLocal: Float32Array | null;
  private lora: Feeds = {};
  private layouts = new Map<Part, PartLayout>();

  constructor(
    policy: HfPolicy,
    private readonly options: HfOrtLearnerOptions = {},
  ) {
    super(policy);
    const c = policy.decoder.config;
    // Refused here, when the run is prepared, rather than when the first update builds the graph.
    if (c.attnLogitSoftcap !== null) throw new UserError(ATTENTION_SOFTCAP);
    this.invGlobal = inverseFrequencies(c.headDim, c.ropeTheta, c.ropeLinearFactor);
    this.invLocal = c.ropeLocalTheta !== null ? inverseFrequencies(c.headDim, c.ropeLocalTheta) : null;
  }

  passTokens(batch: readonly SequenceBatchItem[]): number {
    return this.policy.passTokens(batch);
  }

  /** The adapted modules with their rank and scale, and the key of that set (a change rebuilds the sessions). */
  private loraSpec(): { key: string; spec: HfTrainLoraSpec } {
    const spec = new Map<string, { r: number; scale: number }>();
    for (const [module, l] of this.policy.decoder.linears())
      if (l.lora) spec.set(module, { r: l.lora.a.shape[1] as number, scale: l.lora.scale });
    return { key: [...spec].map(([m, { r, scale }]) => `${m}:${r}:${scale}`).join(','), spec };
  }

  /** The training session for the current adapters (built on first use and when the adapted modules change). */
  private session(): OrtSession {
    const { key, spec } = this.loraSpec();
    if (this.sessions?.key !== key) {
      this.dispose();
      const { decoder } = this.policy;
      // The decoder's shared weight file (the sampler's graph maps the same one), unless a test asks for the graph's own.
      const stored = this.options.stored ?? deviceWeightDtype(this.policy.config.dtype, this.options.device);
      const chunks = { stored, headChunkLogits: this.options.headChunkLogits };
      const weights =
        this.options.maxInlineBytes === undefined
          ? { shared: weightFileOf(decoder, `${decoder.config.family} decoder`), ...chunks }
          : { maxInlineBytes: this.options.maxInlineBytes, ...chunks };
      const graph = buildHfTrainGraph(decoder.config, decoder.weights, spec, weights);
      const options = {
        label: `${decoder.config.family} training`,
        threads: this.options.threads,
        spin: this.options.spin,
        device: this.options.device,
        prepack: false,
        sixteenBit: stored !== 'float32',
      };
      this.sessions = { key, session: new OrtSession(graph, options) };
    }
    return this.sessions.session;
  }

  open(): void {
    this.session();
  }

  /** Which graph param each adapter variable is; their current values (raw A and B) become this pass's feeds. */
  protected paramNames(requests: LossRequest[]): Map<string, string> {
    if (requests.some((r) => !r.options.useLora))
      throw new Error('the ONNX Runtime learner differentiates LoRA adapters: score with useLora');
    const paramOf = new Map<string, string>();
    this.lora = {};
    for (const [module, l] of this.policy.decoder.linears()) {
      if (!l.lora) continue;
      paramOf.set(l.lora.a.name, hfTrainLoraName(module, 'a'));
      paramOf.set(l.lora.b.name, hfTrainLoraName(module, 'b'));
      this.lora[hfTrainLoraName(module, 'a')] = floatTensor(
        (l.lora.a.dataSync() as Float32Array).slice(),
        l.lora.a.shape,
      );
      this.lora[hfTrainLoraName(module, 'b')] = floatTensor(
        (l.lora.b.dataSync() as Float32Array).slice(),
        l.lora.b.shape,
      );
    }
    if (paramOf.size === 0) throw new Error('the ONNX Runtime learner differentiates LoRA adapters: attach them first');
    return paramOf;
  }

  protected gradName(param: string): string {
    return hfGradName(param);
  }

  protected vocabSize(): number {
    return this.policy.decoder.config.vocabSize;
  }

  protected checkLength(promptTokens: number, completionTokens: number): void {
    this.policy.checkLength(promptTokens, completionTokens);
  }

  /**
   * The runs of a pass: per prompt (the same object) and temperature, its non-empty completions over all requests in
   * request order, cut where the predicted tokens times the vocabulary would pass the logit budget.
   */
  protected jobs({ requests, temperatures }: LearnerPass): Part[] {
    const V = this.policy.decoder.config.vocabSize;
    const budget = Math.max(1, Math.floor((this.options.logitBudget ?? LOGIT_BUDGET) / V));
    const groups = new Map<Part['prompt'], Map<number, { r: number; b: number }[]>>();
    requests.forEach(({ batch }, r) =>
      batch.forEach((item, b) => {
        if (item.completion.length === 0) return;
        const byT = groups.get(item.prompt) ?? groups.set(item.prompt, new Map()).get(item.prompt)!;
        (byT.get(temperatures[r]) ?? byT.set(temperatures[r], []).get(temperatures[r])!).push({ r, b });
      }),
    );
    const parts: Part[] = [];
    for (const [prompt, byT] of groups) {
      for (const [temperature, members] of byT) {
        let current: Part | null = null;
        let tokens = 0;
        for (const member of members) {
          const n = requests[member.r].batch[member.b].completion.length;
          if (current === null || (tokens + n > budget && current.members.length > 0)) {
            parts.push((current = { prompt, temperature, members: [] }));
            tokens = 0;
          }
          current.members.push(member);
          tokens += n;
        }
      }
    }
    this.layouts = new Map();
    return parts;
  }

  private layoutOf(part: Part, requests: LossRequest[]): PartLayout {
    return this.layouts.get(part) ?? this.layouts.set(part, this.layout(part, requests)).get(part)!;
  }

  /**
   * Every part's forward branch: its tokens' log-probs and entropies, and its layers' input hidden states (one [N, H]
   * per layer), kept for the gradient branch to recompute each layer from.
   */
  protected forward(parts: Part[], { requests }: LearnerPass): JobScores[] {
    const L = this.policy.decoder.config.numLayers;
    const hiddenOut = Array.from({ length: L }, (_, i) => `${hfHiddenName(i + 1)}.out`);
    const noHidden = this.emptyHidden();
    return parts.map((part) => {
      const layout = this.layoutOf(part, requests);
      const out = this.session().run(
        {
          ...layout.feeds,
          ...this.lora,
          ...noHidden,
          with_gradients: NO_GRADIENTS,
          target_grads: floatTensor(new Float32Array(layout.tokens.length), [layout.tokens.length]),
        },
        ['token_logp', 'token_entropy', ...hiddenOut],
      );
      layout.kept = Object.fromEntries(hiddenOut.map((name, i) => [hfHiddenName(i + 1), out[name]]));
      const logp = out.token_logp.data as Float32Array;
      const entropy = out.token_entropy.data as Float32Array;
      const at = (m: number, j: number) => layout.index[m] + j;
      return { logp: (m, j) => logp[at(m, j)], entropy: (m, j) => entropy[at(m, j)] };
    });
  }

  /** Every part's gradient branch with g at its tokens, from the hidden states its forward kept. */
  protected backward(
    parts: Part[],
    { requests }: LearnerPass,
    g: (k: number, m: number, j: number) => number,
    wanted: string[],
  ): Feeds[] {
    return parts.map((part, k) => {
      const layout = this.layoutOf(part, requests);
      const grads = Float32Array.from(layout.tokens, ({ m, j }) => g(k, m, j));
      const out = this.session().run(
        {
          ...layout.feeds,
          ...this.lora,
          ...layout.kept!,
          with_gradients: WITH_GRADIENTS,
          target_grads: floatTensor(grads, [grads.length]),
        },
        wanted,
      );
      layout.kept = undefined;
      return out;
    });
  }

  /** The hidden-state inputs of the forward pass, which reads none of them: empty [0, H] tensors. */
  private emptyHidden(): Feeds {
    const { numLayers: L, hiddenSize: H } = this.policy.decoder.config;
    const none = floatTensor(new Float32Array(0), [0, H]);
    return Object.fromEntries(Array.from({ length: L }, (_, i) => [hfHiddenName(i + 1), none]));
  }

  /** The graph feeds of one part (all but the LoRA params and target_grads) and the order of its predicted tokens. */
  private layout(part: Part, requests: LossRequest[]): PartLayout {
    const c = this.policy.decoder.config;
    const H = c.hiddenSize;
    const d = c.headDim;
    const completions = part.members.map(({ r, b }) => requests[r].batch[b].completion);
    const P = part.prompt.tokens.length;
    const G = completions.length;
    // Completion tokens 0 … Lu − 2 are inputs; at least one row so that no dimension is zero.
    const C = Math.max(1, Math.max(...completions.map((t) => t.length)) - 1);
    const N = P + G * C;
    const pad = this.policy.padTokenId;
    const prompt = this.policy.prefillInputs([part.prompt], [Array.from(part.prompt.tokens)]); // embeds [1, P, H]
    const rows = completions.map((t) => Array.from({ length: C }, (_, j) => (j < t.length - 1 ? t[j] : pad)));
    const own = tf.tidy(() => this.policy.decoder.embed(rows).dataSync() as Float32Array); // [G, C, H]
    const embeds = new Float32Array(N * H);
    embeds.set(prompt.embeds.subarray(0, P * H));
    embeds.set(own, P * H);
    const positions = new Int32Array(N);
    for (let t = 0; t < P; t++) positions[t] = t;
    for (let m = 0; m < G; m++) for (let j = 0; j < C; j++) positions[P + m * C + j] = P + j;
    const feeds: Feeds = { inputs_embeds: floatTensor(embeds, [N, H]) };
    const rope = (inv: Float32Array, suffix: string) => {
      const { cos, sin } = ropeValues(positions, inv);
      feeds[`rope_cos${suffix}`] = floatTensor(cos, [N, 1, d]);
      feeds[`rope_sin${suffix}`] = floatTensor(sin, [N, 1, d]);
    };
    if (c.mrope) {
      // [3, N] axis-major: the prompt's own 3-D positions, completion row j at P + j + delta on every axis.
      const given = prompt.mropePositions;
      const delta = prompt.ropeDeltas?.[0] ?? 0;
      const axes = new Int32Array(3 * N);
      for (let a = 0; a < 3; a++)
        for (let n = 0; n < N; n++) axes[a * N + n] = n < P ? (given ? given[a * P + n] : n) : positions[n] + delta;
      const { cos, sin } = mropeValues(axes, { ...c.mrope, headDim: d, theta: c.ropeTheta });
      feeds.rope_cos = floatTensor(cos, [N, 1, d]);
      feeds.rope_sin = floatTensor(sin, [N, 1, d]);
    } else rope(this.invGlobal, '');
    for (let j = 0; j < c.deepstackLayers; j++) {
      const dense = new Float32Array(N * H);
      const features = prompt.deepstack?.features[j];
      if (features)
        prompt.deepstack!.rows.forEach((row, k) => dense.set(features.subarray(k * H, (k + 1) * H), row * H));
      feeds[`deepstack.${j}`] = floatTensor(dense, [N, H]);
    }
    if (this.invLocal) rope(this.invLocal, '_local');
    const tokenTypeIds = prompt.tokenTypeIds?.map((r) => Array.from(r));
    const nkv = c.numKvHeads;
    const rep = c.numHeads / nkv;
    // Masks [rows, keys] tiled rep times down the rows: the graph folds a KV head's rep query heads into its rows.
    const tiled = (mask: Float32Array, rows: number, keys: number) => {
      const out = new Float32Array(rep * mask.length);
      for (let r = 0; r < rep; r++) out.set(mask, r * mask.length);
      return floatTensor(out, [rep * rows, keys]);
    };
    const promptMask = (window: number | null) =>
      tiled(
        maskValues({
          batch: 1,
          queries: P,
          past: 0,
          attentionMask: [new Array<number>(P).fill(1)],
          window,
          tokenTypeIds,
        }),
        P,
        P,
      );
    // Completion row i (position P + i) sees prompt key t at distance P + i − t and its own key j ≤ i at i − j.
    const completionMask = (window: number | null) => {
      const K = P + C;
      const mask = new Float32Array(C * K).fill(MASKED);
      for (let i = 0; i < C; i++) {
        for (let t = 0; t < P; t++) if (window === null || P + i - t < window) mask[i * K + t] = 0;
        for (let j = 0; j <= i; j++) if (window === null || i - j < window) mask[i * K + P + j] = 0;
      }
      return tiled(mask, C, K);
    };
    feeds.prompt_mask = promptMask(null);
    feeds.completion_mask = completionMask(null);
    if (c.layerTypes.includes('sliding_attention')) {
      feeds.prompt_mask_sliding = promptMask(c.slidingWindow);
      feeds.completion_mask_sliding = completionMask(c.slidingWindow);
    }
    Object.assign(feeds, {
      row_splits: int64Tensor([P, G * C], [2]),
      score_splits: int64Tensor([P, C], [2]),
      'shape.qc': int64Tensor([G, C, nkv, rep, d], [5]),
      'shape.kc': int64Tensor([G, C, nkv, d], [4]),
      'shape.expand_prompt': int64Tensor([G, nkv, P, d], [4]),
      inv_temperature: floatTensor(Float32Array.of(1 / part.temperature), []),
    });
    // Token 0 is predicted by the prompt's last row, token j ≥ 1 by the completion's row j − 1.
    const tokens: { m: number; j: number }[] = [];
    const predict: number[] = [];
    const targets: number[] = [];
    completions.forEach((t, m) =>
      t.forEach((id, j) => {
        tokens.push({ m, j });
        predict.push(j === 0 ? P - 1 : P + m * C + j - 1);
        targets.push(id);
      }),
    );
    feeds.predict_rows = int64Tensor(predict, [predict.length]);
    feeds.targets = int64Tensor(targets, [targets.length]);
    const index: number[] = [];
    completions.reduce((at, t) => (index.push(at), at + t.length), 0);
    return { feeds, tokens, index };
  }

  /** Releases the ORT sessions; the wrapped policy stays its owner's to dispose. */
  dispose(): void {
    this.sessions?.session.dispose();
    this.sessions = null;
  }
}
