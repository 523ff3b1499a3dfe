// A Hugging Face checkpoint's Learner on ONNX Runtime: the LoRA gradients of a
// loss of the completion log-probabilities, in the three parts the built-in model's ORT learner uses
// (models/onnx/ort-learner.ts):
//   1. the log-probs (and entropies) by an ORT forward pass of the training graph (hf-train-graph.ts, its forward
//      branch), so they are the log-probs of the very forward that step 3 differentiates; it also returns each layer's
//      input hidden state ([N, H] per layer, kept until step 3);
//   2. the loss value and g = dLoss/dlogp in tfjs on those small [B, L] tensors, with the caller's own loss function,
//      so every loss type and option of trainer/loss/loss.ts works unchanged;
//   3. per prompt group, one run of the training graph's gradient branch, which recomputes each layer from its kept
//      input and differentiates it (last layer first), returning the gradient of Σ g · logp with respect to every
//      LoRA A and B, which by the chain rule is dLoss/dθ. The same work as a forward then a forward + backward, with
//      one layer's activations alive at a time (measured: docs/performance.md, "One GRPO step against PyTorch eager").
// The tfjs variables stay the parameters (AdamW updates them, checkpoints save them); their values are fed on every
// run, so no session is rebuilt after an update. One session serves both passes (its graph's If node picks the
// branch), without ORT's memory arena and weight prepacking: it holds no weights of its own
// (it maps the decoder's shared weight file, weight-file.ts, as the sampler's session does), and frees a pass's buffers when the pass ends. On SmolLM2-135M's shape two sessions
// with arena and prepacking held about twice the memory at the same speed. Everything else of the Learner contract (adapters, saving, the tfjs
// tokenLogProbs) is the wrapped HfPolicy's.
// Layout: all of a pass's chunks come at once (lossGradientsSum), so a prompt group whose completions fall in several
// chunks runs its prompt once; a group is cut into parts only where its [predicted tokens, vocabulary] logits would
// pass LOGIT_BUDGET (each part runs the prompt again).
import * as tf from '@tensorflow/tfjs';
import { Tensor } from 'onnxruntime-common';
import type { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import type { HfPolicy } from '../hf/policy.ts';
import { maskValues } from '../layers/attention.ts';
import { inverseFrequencies, ropeValues } from '../layers/rope.ts';
import type {
  LogProbLoss,
  LossGradients,
  LossRequest,
  Learner,
  LoraSettings,
  SummedLossGradients,
} from '../learner.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from '../types.ts';
import type { Device } from './device.ts';
import {
  buildHfTrainGraph,
  hfGradName,
  hfHiddenName,
  hfTrainLoraName,
  type HfTrainLoraSpec,
} from './hf-train-graph.ts';
import { OrtSession, floatTensor, int64Tensor, type Feeds } from './session.ts';
import { weightFileOf } from './weight-file.ts';
import { deviceWeightDtype } from './weight-dtype.ts';
import type { WeightDtype } from './weight-encoding.ts';
import { logpLossAndGradient } from './logp-loss.ts';

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
interface Part {
  prompt: EncodedPrompt;
  temperature: number;
  members: { r: number; b: number }[];
}

interface PartLayout {
  feeds: Feeds;
  /** Predicted tokens in member order, then token order: their (member, j). */
  tokens: { m: number; j: number }[];
}

export class HfOrtLearner implements Learner {
  readonly adapterFiles: readonly string[];
  private sessions: { key: string; session: OrtSession } | null = null;
  private readonly invGlobal: Float32Array;
  private readonly invLocal: Float32Array | null;

  constructor(
    readonly policy: HfPolicy,
    private readonly options: HfOrtLearnerOptions = {},
  ) {
    this.adapterFiles = policy.adapterFiles;
    const c = policy.decoder.config;
    // Refused here, when the run is prepared, rather than when the first update builds the graph.
    if (c.attnLogitSoftcap !== null) throw new UserError(ATTENTION_SOFTCAP);
    this.invGlobal = inverseFrequencies(c.headDim, c.ropeTheta, c.ropeLinearFactor);
    this.invLocal = c.ropeLocalTheta !== null ? inverseFrequencies(c.headDim, c.ropeLocalTheta) : null;
  }

  tokenLogProbs(batch: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    return this.policy.tokenLogProbs(batch, options);
  }
  passTokens(batch: readonly SequenceBatchItem[]): number {
    return this.policy.passTokens(batch);
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
        arena: false,
        prepack: false,
        sixteenBit: stored !== 'float32',
      };
      this.sessions = { key, session: new OrtSession(graph, options) };
    }
    return this.sessions.session;
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
    if (requests.some((r) => !r.options.useLora))
      throw new Error('the ONNX Runtime learner differentiates LoRA adapters: score with useLora');
    const paramOf = new Map<string, string>();
    for (const [module, l] of this.policy.decoder.linears()) {
      if (!l.lora) continue;
      paramOf.set(l.lora.a.name, hfTrainLoraName(module, 'a'));
      paramOf.set(l.lora.b.name, hfTrainLoraName(module, 'b'));
    }
    if (paramOf.size === 0) throw new Error('the ONNX Runtime learner differentiates LoRA adapters: attach them first');
    for (const v of variables)
      if (!paramOf.has(v.name))
        throw new Error(`the ONNX Runtime learner has no gradient for ${v.name} (LoRA adapters only)`);
    for (const { batch } of requests)
      for (const it of batch) this.policy.checkLength(it.prompt.tokens.length, it.completion.length);
    const V = this.policy.decoder.config.vocabSize;
    const temperatures = requests.map(({ options }) => {
      const T = options.temperature ?? 1;
      if (!(T > 0)) throw new Error(`temperature must be positive, got ${T}`);
      return T;
    });
    for (const { batch } of requests)
      for (const it of batch)
        for (const t of it.completion)
          if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
    const loraFeeds = this.loraFeeds();
    const parts = this.parts(requests, temperatures);
    const layouts = new Map<Part, PartLayout>();
    const layoutOf = (part: Part) => layouts.get(part) ?? layouts.set(part, this.layout(part, requests)).get(part)!;
    const shapes = requests.map(({ batch }) => ({
      B: batch.length,
      L: Math.max(0, ...batch.map((it) => it.completion.length)),
    }));
    const lps = shapes.map(({ B, L }) => ({
      logp: new Float32Array(B * L),
      entropy: new Float32Array(B * L),
      mask: new Float32Array(B * L),
    }));

    // 1. Every part's forward: its tokens' log-probs and entropies into their requests' [B, L] arrays, and its layers'
    // input hidden states (one [N, H] per layer), which step 3 recomputes each layer from.
    const L = this.policy.decoder.config.numLayers;
    const hiddenOut = Array.from({ length: L }, (_, i) => `${hfHiddenName(i + 1)}.out`);
    const noHidden = this.emptyHidden();
    const kept = new Map<Part, Feeds>();
    for (const part of parts) {
      const layout = layoutOf(part);
      const out = this.session().run(
        {
          ...layout.feeds,
          ...loraFeeds,
          ...noHidden,
          with_gradients: NO_GRADIENTS,
          target_grads: floatTensor(new Float32Array(layout.tokens.length), [layout.tokens.length]),
        },
        ['token_logp', 'token_entropy', ...hiddenOut],
      );
      kept.set(part, Object.fromEntries(hiddenOut.map((name, i) => [hfHiddenName(i + 1), out[name]])));
      const logp = out.token_logp.data as Float32Array;
      const entropy = out.token_entropy.data as Float32Array;
      layout.tokens.forEach(({ m, j }, k) => {
        const { r, b } = part.members[m];
        const o = b * shapes[r].L + j;
        lps[r].logp[o] = logp[k];
        lps[r].entropy[o] = entropy[k];
        lps[r].mask[o] = 1;
      });
    }
    // 2. The losses and g = dLoss/dlogp, request by request, in tfjs.
    const losses = requests.map(({ options, loss }, r) => logpLossAndGradient(lps[r], shapes[r], options, loss));
    // 3. Every part's forward + backward with g at its tokens; the gradients summed in part order.
    const wanted = variables.map((v) => hfGradName(paramOf.get(v.name)!));
    const sums = new Map<string, Float32Array>();
    for (const part of parts) {
      const layout = layoutOf(part);
      const g = new Float32Array(layout.tokens.length);
      layout.tokens.forEach(({ m, j }, k) => {
        const { r, b } = part.members[m];
        g[k] = losses[r].g[b * shapes[r].L + j];
      });
      const out = this.session().run(
        {
          ...layout.feeds,
          ...loraFeeds,
          ...kept.get(part)!,
          with_gradients: WITH_GRADIENTS,
          target_grads: floatTensor(g, [g.length]),
        },
        wanted,
      );
      kept.delete(part);
      for (const name of wanted) {
        const data = out[name].data as Float32Array;
        const sum = sums.get(name);
        if (sum) for (let i = 0; i < data.length; i++) sum[i] += data[i];
        else sums.set(name, Float32Array.from(data));
      }
    }
    const grads: tf.NamedTensorMap = {};
    for (const v of variables) {
      const sum = sums.get(hfGradName(paramOf.get(v.name)!));
      grads[v.name] = sum ? tf.tensor(sum, v.shape) : tf.zerosLike(v);
    }
    return { values: losses.map(({ value }) => value), grads };
  }

  /** The hidden-state inputs of the forward pass, which reads none of them: empty [0, H] tensors. */
  private emptyHidden(): Feeds {
    const { numLayers: L, hiddenSize: H } = this.policy.decoder.config;
    const none = floatTensor(new Float32Array(0), [0, H]);
    return Object.fromEntries(Array.from({ length: L }, (_, i) => [hfHiddenName(i + 1), none]));
  }

  /** The adapters' current values as the graphs' param feeds (raw A and B, as the variables hold them). */
  private loraFeeds(): Feeds {
    const feeds: Feeds = {};
    for (const [module, l] of this.policy.decoder.linears()) {
      if (!l.lora) continue;
      feeds[hfTrainLoraName(module, 'a')] = floatTensor((l.lora.a.dataSync() as Float32Array).slice(), l.lora.a.shape);
      feeds[hfTrainLoraName(module, 'b')] = floatTensor((l.lora.b.dataSync() as Float32Array).slice(), l.lora.b.shape);
    }
    return feeds;
  }

  /**
   * The runs of a pass: per prompt (the same object) and temperature, its non-empty completions over all requests in
   * request order, cut where the predicted tokens times the vocabulary would pass the logit budget.
   */
  private parts(requests: LossRequest[], temperatures: number[]): Part[] {
    const V = this.policy.decoder.config.vocabSize;
    const budget = Math.max(1, Math.floor((this.options.logitBudget ?? LOGIT_BUDGET) / V));
    const groups = new Map<EncodedPrompt, Map<number, { r: number; b: number }[]>>();
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
    return parts;
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
    rope(this.invGlobal, '');
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
    return { feeds, tokens };
  }

  /** Releases the ORT sessions; the wrapped policy stays its owner's to dispose. */
  dispose(): void {
    this.sessions?.session.dispose();
    this.sessions = null;
  }
}
