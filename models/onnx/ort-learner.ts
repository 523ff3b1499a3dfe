// The built-in model's Learner on ONNX Runtime (models/ layer, ONNX Runtime engine): the LoRA gradients of a loss of
// the completion log-probabilities, computed in three parts (issue 17's learner):
//   1. the log-probs (and entropies when asked) by an ORT forward pass (OrtSampler.tokenLogProbs, no gradient);
//   2. the loss value and g = dLoss/dlogp in tfjs, on those small [B, L] tensors, with the caller's own loss function,
//      so every loss type and option of trainer/loss.ts works unchanged (the loss depends on the parameters only
//      through the log-probs);
//   3. per prompt group, one run of the training graph (builtin-train-graph.ts: forward + backward) that returns the
//      gradient of Σ g · logp with respect to every LoRA A and B, which by the chain rule is dLoss/dθ.
// The tfjs variables stay the parameters: AdamW updates them and checkpoints save them; their values are fed to ORT
// on every call, so no session is rebuilt after an update. Everything else of the Learner contract (tfjs
// tokenLogProbs, adapters, saving) is the wrapped BuiltinPolicy's.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../core/rng.ts';
import type { LogProbLoss, LossGradients, Learner, LoraSettings } from '../learner.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from '../types.ts';
import { BuiltinPolicy } from '../builtin/policy.ts';
import type { Policy } from '../policy.ts';
import { UserError } from '../../core/errors.ts';
import type { LoraAdapter } from '../builtin/lora.ts';
import type { Projection } from '../builtin/weights.ts';
import { headDim, patchDim, patchesPerImage } from '../builtin/config.ts';
import { NEG, ropeValues } from '../builtin/transformer.ts';
import { packPrompts } from '../builtin/sampling.ts';
import { loraSpec } from './builtin-graph.ts';
import { buildBuiltinTrainGraph, gradName, trainLoraName } from './builtin-train-graph.ts';
import { OrtSession, floatTensor, int64Tensor, type Feeds } from './session.ts';
import { OrtSampler } from './ort-sampler.ts';

export interface OrtLearnerOptions {
  /** ORT intra-op threads (default: every core). */
  threads?: number;
  /** Idle intra-op threads spin (models/onnx/session.ts; default off). */
  spin?: boolean;
  /** An ORT sampler of the same policy to score with (one is created otherwise). */
  scorer?: OrtSampler;
}

/** The LoRA settings a training graph was built for, as a key. */
const loraKey = (policy: BuiltinPolicy): string => {
  const l = policy.lora!;
  return `${l.config.r}:${l.scale}:${l.config.targetModules.join(',')}`;
};

export class OrtLearner implements Learner {
  readonly adapterFiles: readonly string[];
  private scorer: { key: string; sampler: OrtSampler } | null = null;
  private train: { key: string; session: OrtSession } | null = null;

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

  /** The scoring sampler (the caller's, or one built for the current LoRA settings), its adapters synced. */
  private scoring(): OrtSampler {
    const sampler = this.options.scorer ?? this.ownScorer();
    sampler.syncLora();
    return sampler;
  }

  private ownScorer(): OrtSampler {
    const key = loraKey(this.policy);
    if (this.scorer?.key !== key) {
      this.scorer?.sampler.dispose();
      this.scorer = { key, sampler: new OrtSampler(this.policy, { threads: this.options.threads, spin: this.options.spin }) };
    }
    return this.scorer.sampler;
  }

  /** The training session for the policy's current LoRA settings (built on first use and when they change). */
  private trainSession(): OrtSession {
    const key = loraKey(this.policy);
    if (this.train?.key !== key) {
      this.train?.session.dispose();
      const spec = { arch: this.policy.arch, lora: loraSpec(this.policy.lora!.config) };
      this.train = { key, session: new OrtSession(buildBuiltinTrainGraph(spec, this.policy.weights), { threads: this.options.threads, spin: this.options.spin, label: 'built-in model training' }) };
    }
    return this.train.session;
  }

  lossGradients(batch: SequenceBatchItem[], options: TokenLogProbsOptions, loss: LogProbLoss, variables: tf.Variable[]): LossGradients {
    const lora = this.policy.lora;
    if (!lora || !options.useLora) throw new Error('the ONNX Runtime learner differentiates LoRA adapters: attach them and score with useLora');
    // Which graph param each variable is.
    const paramOf = new Map<string, string>();
    lora.layers.forEach((adapters, i) => {
      for (const [p, adapter] of Object.entries(adapters) as [Projection, LoraAdapter][]) {
        paramOf.set(adapter.a.name, trainLoraName(i, p, 'a'));
        paramOf.set(adapter.b.name, trainLoraName(i, p, 'b'));
      }
    });
    for (const v of variables) if (!paramOf.has(v.name)) throw new Error(`the ONNX Runtime learner has no gradient for ${v.name} (LoRA adapters only)`);

    // 1-2. Log-probs by an ORT forward pass; value and g = dLoss/dlogp in tfjs.
    const lp = this.scoring().tokenLogProbs(batch, options);
    const { value, grad } = tf.valueAndGrad((logProbs: tf.Tensor) => loss({ ...lp, logProbs: logProbs as tf.Tensor2D }))(lp.logProbs);
    const g = grad.dataSync() as Float32Array;
    const L = lp.logProbs.shape[1];
    tf.dispose([grad, lp.logProbs, lp.mask, ...(lp.entropy ? [lp.entropy] : [])]);

    // 3. One training-graph run per prompt group, the gradients summed.
    const session = this.trainSession();
    const loraFeeds: Feeds = {};
    lora.layers.forEach((adapters, i) => {
      for (const [p, adapter] of Object.entries(adapters) as [Projection, LoraAdapter][]) {
        loraFeeds[trainLoraName(i, p, 'a')] = floatTensor(adapter.a.dataSync() as Float32Array, adapter.a.shape);
        loraFeeds[trainLoraName(i, p, 'b')] = floatTensor(adapter.b.dataSync() as Float32Array, adapter.b.shape);
      }
    });
    const wanted = variables.map((v) => gradName(paramOf.get(v.name)!));
    const sums = new Map<string, Float32Array>();
    const groups = new Map<EncodedPrompt, number[]>();
    batch.forEach((item, i) => groups.set(item.prompt, [...(groups.get(item.prompt) ?? []), i]));
    for (const [prompt, members] of groups) {
      const feeds = this.groupFeeds(prompt, members.map((i) => batch[i].completion), members.map((i) => g.subarray(i * L, (i + 1) * L)), options.temperature ?? 1);
      if (!feeds) continue;
      const out = session.run({ ...feeds, ...loraFeeds }, wanted);
      for (const name of wanted) {
        const data = out[name].data as Float32Array;
        const sum = sums.get(name);
        if (sum) for (let k = 0; k < data.length; k++) sum[k] += data[k];
        else sums.set(name, Float32Array.from(data));
      }
    }
    const grads: tf.NamedTensorMap = {};
    for (const v of variables) {
      const sum = sums.get(gradName(paramOf.get(v.name)!));
      grads[v.name] = sum ? tf.tensor(sum, v.shape) : tf.zerosLike(v);
    }
    return { value, grads };
  }

  /**
   * The training graph's feeds for one prompt and its completions, with `weights[m][j]` = dLoss/dlogp of completion m's
   * token j; null when every completion is empty.
   */
  private groupFeeds(prompt: EncodedPrompt, completions: number[][], weights: Float32Array[], temperature: number): Feeds | null {
    const { arch, tokenizer } = this.policy;
    const V = arch.vocabSize;
    const H = arch.nHeads;
    const dh = headDim(arch);
    const Lu = Math.max(...completions.map((c) => c.length));
    if (Lu === 0) return null;
    const P = prompt.tokens.length;
    const G = completions.length;
    // Completion tokens 0 … Lu-2 are inputs (scoring.ts's layout); at least one row, so no dimension is zero.
    const Cn = Math.max(1, Lu - 1);
    const N = P + G * Cn;
    const { batch, ends } = packPrompts(this.policy, tokenizer, [prompt]);
    const tokens = new Int32Array(N);
    const positions = new Int32Array(N);
    tokens.set(batch.tokens);
    positions.set(batch.positions);
    const target = new Float32Array(N * V);
    completions.forEach((completion, m) => {
      const cursor = ends[0].clone();
      for (let j = 0; j < Cn; j++) {
        const row = P + m * Cn + j;
        tokens[row] = j < completion.length - 1 ? completion[j] : tokenizer.pad;
        positions[row] = cursor.push(tokens[row]);
      }
      completion.forEach((t, j) => {
        if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
        const row = j === 0 ? P - 1 : P + m * Cn + j - 1; // the row whose logits predict token j
        target[row * V + t] += weights[m][j];
      });
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
    const K = P + Cn;
    const completionMask = new Float32Array(Cn * K).fill(NEG);
    for (let i = 0; i < Cn; i++) completionMask.fill(0, i * K, i * K + P + i + 1);
    return {
      input_ids: int64Tensor(tokens, [N]),
      patch_pixels: floatTensor(pixels, [patchCount, patchDim(arch)]),
      patch_slots: int64Tensor(Int32Array.from({ length: patchCount }, (_, i) => i % p), [patchCount]),
      patch_index: int64Tensor(patchIndex, [N]),
      rope_cos: floatTensor(cos, [N, arch.dModel]),
      rope_sin: floatTensor(sin, [N, arch.dModel]),
      prompt_mask: floatTensor(promptMask, [P, P]),
      completion_mask: floatTensor(completionMask, [Cn, K]),
      row_splits: int64Tensor([P, G * Cn], [2]),
      score_splits: int64Tensor([P, Cn], [2]),
      'shape.g_c_h_dh': int64Tensor([G, Cn, H, dh], [4]),
      'shape.h_g_c_p': int64Tensor([H, G, Cn, P], [4]),
      'shape.h_gc_p': int64Tensor([H, G * Cn, P], [3]),
      'shape.h_g_c_dh': int64Tensor([H, G, Cn, dh], [4]),
      inv_temperature: floatTensor(Float32Array.of(1 / temperature), []),
      target_weights: floatTensor(target, [N, V]),
    };
  }

  /** Releases the ORT sessions; the wrapped policy stays its owner's to dispose. */
  dispose(): void {
    this.train?.session.dispose();
    this.train = null;
    this.scorer?.sampler.dispose();
    this.scorer = null;
  }
}

/** The ORT learner of a policy (the built-in model only: a UserError for any other). */
export function ortLearner(policy: Policy, options: OrtLearnerOptions = {}): OrtLearner {
  if (!(policy instanceof BuiltinPolicy)) throw new UserError('engine ort: the ONNX Runtime learner runs the built-in model only; use engine tfjs for Hugging Face checkpoints');
  return new OrtLearner(policy, options);
}
