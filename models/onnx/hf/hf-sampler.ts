// A Sampler (models/sampler.ts) for Hugging Face checkpoints on ONNX Runtime: the
// decoder's forward passes run in the graph of models/onnx/hf/hf-graph.ts; everything else is the wrapped HfPolicy's, which
// stays the Learner: the prompt format, tokenizer and chat template, the left padding and the token draws
// (HfPolicy.sampleGroupsWith, so both engines draw the same tokens from logits that agree within 1e-4). A VLM's vision
// tower runs on ONNX Runtime too (its image model's ortTower, installed in the policy while this sampler lives, so the
// learner's passes read the same features); what the architecture keeps on tfjs after it (the SigLIP models'
// connector or projector) and the merge into the token embeddings stay there, and the merged rows enter the decoder
// graph as inputs_embeds.
//   rollouts      all prompts as one left-padded batch, each prefilled once, its cache repeated for its G rows, then
//                 KV-cache decoding (models/onnx/hf/hf-generate.ts)
//   log-probs     per distinct prompt: one prefill, then its completions as one batch attending to the prompt's cache
//                 (tokens 0 … L-2 in, as models/hf/score.ts predicts token j from the position before it); no gradient
// After each learner update the trainer calls syncLora() (the adapters are graph inputs: no rebuild).
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../../core/rng.ts';
import type { HfPolicy } from '../../hf/policy.ts';
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
import type { Device } from '../device.ts';
import type { EngineTower } from '../../hf/image-model.ts';
import { generateOrt } from './hf-generate.ts';
import { HfOrtModel } from './hf-session.ts';
import { deviceWeightDtype } from '../weight-dtype.ts';
import type { WeightDtype } from '../weight-encoding.ts';

/** Most logit values one scoring run returns (2^25 floats, 128 MB). */
const LOGIT_BUDGET = 2 ** 25;

export interface HfOrtSamplerOptions {
  threads?: number;
  spin?: boolean;
  device?: Device;
  /** Most logit values one scoring run returns (default LOGIT_BUDGET; tests make it small to exercise chunking). */
  logitBudget?: number;
  /** The weights' stored type (default: deviceWeightDtype of the checkpoint's dtype and the device; tests set it). */
  stored?: WeightDtype;
  /** Keep KV caches and adapters on the device between runs (default: on WebGPU; tests set it on the CPU). */
  keepOnDevice?: boolean;
}

export class HfOrtSampler extends PolicyFront<HfPolicy> implements Sampler {
  readonly model: HfOrtModel;
  /** The VLM's vision tower on ONNX Runtime, opened at its first image (a text-only run never builds it). */
  private readonly tower: EngineTower | null;
  private readonly releaseTower: () => void;
  private readonly logitBudget: number;

  constructor(policy: HfPolicy, options: HfOrtSamplerOptions = {}) {
    super(policy);
    const { logitBudget, stored, keepOnDevice, ...session } = options;
    this.model = new HfOrtModel(policy.decoder, {
      ...session,
      keepOnDevice,
      stored: stored ?? deviceWeightDtype(policy.config.dtype, session.device),
    });
    const { tower, release } = policy.useOrtVisionTower(session);
    this.tower = tower;
    this.releaseTower = release;
    this.logitBudget = logitBudget ?? LOGIT_BUDGET;
  }

  /**
   * Free the host's copies of what ORT now holds in its weight files (a run on the ONNX Runtime engine calls this once
   * the sampler exists): the decoder's projections and head (HfDecoder.releaseProjectionWeights) and, for a VLM, the
   * vision tower's projections, whose ORT tower is opened now (it reads them once). Afterwards only ONNX Runtime can
   * run this policy's forward passes. Only for weights loaded on the host (HfPolicy.load hostWeights).
   */
  releaseHostWeights(): void {
    if (this.tower) {
      this.tower.open();
      this.policy.image!.releaseTowerWeights();
    }
    this.policy.decoder.releaseProjectionWeights();
  }

  /** Read the learner's current adapters (after every update, or a loaded adapter). */
  syncLora(): void {
    this.model.syncLora();
  }

  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[] {
    return this.sampleGroups([prompt], group, options, rng)[0];
  }

  sampleGroups(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][] {
    return this.policy.sampleGroupsWith(prompts, group, options, rng, (ids, attentionMask, generateOptions) =>
      generateOrt(
        this.model,
        { ids, attentionMask, ...this.policy.prefillInputs(prompts, ids, attentionMask) },
        generateOptions,
      ),
    );
  }

  /** Completion log-probabilities without gradients (reference and old policy), as models/hf/score.ts defines them. */
  tokenLogProbs(items: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    for (const it of items) this.policy.checkLength(it.prompt.tokens.length, it.completion.length);
    const V = this.model.config.vocabSize;
    const T = options.temperature ?? 1;
    if (!(T > 0)) throw new Error(`temperature must be positive, got ${T}`);
    const useLora = options.useLora && this.model.hasLora;
    const B = items.length;
    const L = Math.max(0, ...items.map((it) => it.completion.length));
    const logp = new Float32Array(B * L);
    const entropy = new Float32Array(B * L);
    const mask = new Float32Array(B * L);
    const byPrompt = new Map<EncodedPrompt, number[]>();
    items.forEach((it, b) => byPrompt.set(it.prompt, [...(byPrompt.get(it.prompt) ?? []), b]));
    /** log-softmax(row / T) at `target` (and the entropy of that distribution) into slot o. */
    const score = (row: Float32Array, target: number, o: number) => {
      const scored = scoreToken(row, target, T, options.withEntropy ?? false, V);
      logp[o] = scored.logp;
      if (options.withEntropy) entropy[o] = scored.entropy;
    };
    const pad = this.policy.padTokenId;
    for (const [prompt, members] of byPrompt) {
      const Lu = Math.max(...members.map((b) => items[b].completion.length));
      if (Lu === 0) continue;
      const P = prompt.tokens.length;
      const ids = [Array.from(prompt.tokens)];
      const prefill = this.policy.prefillInputs([prompt], ids);
      const delta = prefill.ropeDeltas?.[0];
      const first = this.model.run({
        ...prefill,
        rows: 1,
        seq: P,
        attentionMask: [new Array<number>(P).fill(1)],
        cache: null,
        logitRows: [P - 1],
        useLora,
      });
      const C = Lu - 1;
      // Completions in chunks whose [rows, C, V] logits stay under the logit budget (at SmolVLM's 49,280-token
      // vocabulary eight 376-token completions would be 0.6 GB at once).
      const chunk = C > 0 ? Math.max(1, Math.floor(this.logitBudget / (C * V))) : members.length;
      for (let start = 0; start < members.length; start += chunk) {
        const part = members.slice(start, start + chunk);
        let rest: Float32Array | null = null;
        if (C > 0) {
          // Completion tokens 0 … C-1 of every member, right-padded (a padded position only feeds rows never read).
          const rows = part.map((b) =>
            Array.from({ length: C }, (_, j) => (j < items[b].completion.length - 1 ? items[b].completion[j] : pad)),
          );
          const embeds = tf.tidy(() => this.policy.decoder.embed(rows).dataSync() as Float32Array).slice();
          const cache = this.model.repeatCache(first.cache, part.length);
          // Multimodal RoPE: completion token j at P + j + delta on all three axes ([3, rows · C], axis-major).
          const along =
            delta === undefined ? null : part.flatMap(() => Array.from({ length: C }, (_, j) => P + j + delta));
          const out = this.model.run({
            embeds,
            ...(along ? { mropePositions: [...along, ...along, ...along] } : {}),
            rows: part.length,
            seq: C,
            attentionMask: rows.map(() => new Array<number>(P + C).fill(1)),
            cache,
            useLora,
            keepCache: false,
          });
          this.model.releaseCache(cache);
          this.model.releaseCache(out.cache);
          rest = out.logits; // [rows, C, V]
        }
        part.forEach((b, row) => {
          Array.from(items[b].completion).forEach((t, j) => {
            if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
            const logits = j === 0 ? first.logits : rest!.subarray((row * C + j - 1) * V, (row * C + j) * V);
            score(logits, t, b * L + j);
            mask[b * L + j] = 1;
          });
        });
      }
      this.model.releaseCache(first.cache);
    }
    return {
      logProbs: tf.tensor2d(logp, [B, L]),
      mask: tf.tensor2d(mask, [B, L]),
      ...(options.withEntropy ? { entropy: tf.tensor2d(entropy, [B, L]) } : {}),
    };
  }

  dispose(): void {
    this.model.dispose();
    this.releaseTower();
  }
}
