// A Sampler (models/sampler.ts) for the built-in model on ONNX Runtime (models/ layer, ONNX Runtime engine): rollouts
// with KV-cache decoding (each prompt prefilled once, all prompts in one batch, its G completions attending to its
// cache together), greedy and sampled draws through models/token-sampling.ts in the same row order and with the same
// Rng draws as the tfjs sampler (models/builtin/sampling.ts), and no-grad completion log-probabilities (reference and
// old policy). The prompt format, tokenizer and limits are the wrapped BuiltinPolicy's; it stays the Learner.
// After each learner update the trainer calls syncLora() (the adapters are graph inputs: no rebuild).
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../core/rng.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { Episode } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import { UserError } from '../../core/errors.ts';
import type { Sampler } from '../sampler.ts';
import type { Completion, EncodedPrompt, ModelInput, SamplingOptions, SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from '../types.ts';
import type { BuiltinPolicy } from '../builtin/policy.ts';
import { packPrompts, RowDraws } from '../builtin/sampling.ts';
import { headDim } from '../builtin/config.ts';
import type { PositionCursor } from '../builtin/positions.ts';
import { BuiltinOrtModel, type KVCache, type PatchSlot } from './builtin-session.ts';
import type { Device } from './device.ts';

export interface OrtSamplerOptions {
  /** ORT intra-op threads (default: every core). */
  threads?: number;
  /** Idle intra-op threads spin (see models/onnx/session.ts; default off). */
  spin?: boolean;
  /** Execution provider (default the CPU; models/onnx/device.ts). */
  device?: Device;
}

/** Own-cache capacity grows in steps of this many positions (unfilled ones are masked). */
const OWN_CHUNK = 16;

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

export class OrtSampler implements Sampler {
  readonly model: BuiltinOrtModel;

  constructor(
    readonly policy: BuiltinPolicy,
    options: OrtSamplerOptions = {},
  ) {
    this.model = new BuiltinOrtModel(policy, options);
  }

  /** Own-cache buffers (k and v per layer) of at least `size` values, kept across rollouts. */
  private ownBuffers(size: number): { k: Float32Array[]; v: Float32Array[] } {
    const layers = this.policy.arch.nLayers;
    if (!this.own || this.own.k[0].length < size) {
      this.own = { k: Array.from({ length: layers }, () => new Float32Array(size)), v: Array.from({ length: layers }, () => new Float32Array(size)) };
    }
    return this.own;
  }
  private own: { k: Float32Array[]; v: Float32Array[] } | null = null;

  /** Read the learner's current adapters (call after every update). */
  syncLora(): void {
    if (this.policy.lora) this.model.syncLora(this.policy.lora);
  }

  get contextLimit(): number {
    return this.policy.contextLimit;
  }
  get imageSize(): number {
    return this.policy.imageSize;
  }
  encode(input: ModelInput): EncodedPrompt {
    return this.policy.encode(input);
  }
  decode(tokens: number[]): string {
    return this.policy.decode(tokens);
  }
  prompt(env: Env, episode: Episode): EncodedPrompt {
    return this.policy.prompt(env, episode);
  }
  chatPrompt(messages: ChatMessage[]): Promise<EncodedPrompt> {
    return this.policy.chatPrompt(messages);
  }
  responseOf(env: Env, completionText: string): string {
    return this.policy.responseOf(env, completionText);
  }
  referenceTokens(env: Env, episode: Episode): number {
    return this.policy.referenceTokens(env, episode);
  }

  private checkLength(promptTokens: number, newTokens: number): void {
    if (promptTokens + newTokens > this.policy.arch.maxContext) {
      throw new UserError(`a prompt of ${promptTokens} tokens plus ${newTokens} new tokens exceeds the model's context of ${this.policy.arch.maxContext} tokens`);
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

  /** Prefill padded prompts: their caches and every position's logits. */
  private prefill(padded: PaddedPrompts, useLora: boolean): { cache: KVCache; logits: Float32Array } {
    const { count: U, length: P } = padded;
    const out = this.model.forward({ rows: U, seq: P, tokens: padded.tokens, positions: padded.positions, slots: padded.slots, useLora });
    return { cache: { count: U, length: P, k: out.keys, v: out.values }, logits: out.logits };
  }

  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[] {
    return this.sampleGroups([prompt], group, options, rng)[0];
  }

  sampleGroups(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][] {
    for (const p of prompts) this.checkLength(p.tokens.length, options.maxNewTokens);
    const { arch, tokenizer } = this.policy;
    const V = arch.vocabSize;
    const H = arch.nHeads;
    const dh = headDim(arch);
    const U = prompts.length;
    const rows = U * group;
    const padded = this.padPrompts(prompts);
    const { cache: promptCache, logits: prefillLogits } = this.prefill(padded, true);
    const P = padded.length;
    let values = prefillLogits;
    let rowLogits = (r: number) => {
      const u = Math.floor(r / group);
      const o = (u * P + padded.lengths[u] - 1) * V;
      return values.subarray(o, o + V);
    };
    const promptValid = Int32Array.from({ length: U }, (_, u) => padded.lengths[u]);
    // Each row's own keys/values, group-major (row r = u·G + g at slot m = (u·H + h)·G + g): k and v
    // [U·H·G, capacity, dh]; the capacity grows by OWN_CHUNK positions (unfilled ones are masked), re-laid out in place
    // in buffers kept across rollouts (fresh arrays each time cost more in page faults and copies than the step itself).
    const slots = rows * H;
    const most = Math.ceil(Math.max(1, options.maxNewTokens - 1) / OWN_CHUNK) * OWN_CHUNK;
    const buffers = this.ownBuffers(slots * most * dh);
    const own = { k: [] as Float32Array[], v: [] as Float32Array[], capacity: 0, filled: 0 };
    const grow = (capacity: number) => {
      const old = own.capacity;
      for (const buffer of [...buffers.k, ...buffers.v]) {
        // Last slot first: slot m moves up to m·capacity·dh, never onto a lower slot's data not yet moved.
        for (let m = slots - 1; m >= 0; m--) buffer.copyWithin(m * capacity * dh, m * old * dh, (m * old + own.filled) * dh);
      }
      own.capacity = capacity;
      own.k = buffers.k.map((b) => b.subarray(0, slots * capacity * dh));
      own.v = buffers.v.map((b) => b.subarray(0, slots * capacity * dh));
    };

    const draws = new RowDraws(rows, tokenizer);
    const cursors = Array.from({ length: rows }, (_, r) => padded.ends[Math.floor(r / group)].clone());
    const positions = new Int32Array(rows);
    for (let step = 0; step < options.maxNewTokens; step++) {
      const fed = draws.step(rowLogits, options, rng);
      if (draws.allFinished() || step === options.maxNewTokens - 1) break;
      for (let r = 0; r < rows; r++) positions[r] = cursors[r].push(fed[r]);
      if (step >= own.capacity) grow(own.capacity + OWN_CHUNK);
      const out = this.model.decodeStep({ group, tokens: fed, positions, useLora: true, prompt: { cache: promptCache, valid: promptValid }, own });
      // Append this step's key and value at position `step` (keys/values [U, H, G, dh] = [slots, dh]).
      const T = own.capacity;
      for (let i = 0; i < arch.nLayers; i++) {
        const [k, v, ok, ov] = [out.keys[i], out.values[i], own.k[i], own.v[i]];
        for (let m = 0; m < slots; m++) {
          const o = (m * T + step) * dh;
          for (let j = 0; j < dh; j++) {
            ok[o + j] = k[m * dh + j];
            ov[o + j] = v[m * dh + j];
          }
        }
      }
      own.filled = step + 1;
      values = out.logits;
      rowLogits = (r: number) => values.subarray(r * V, (r + 1) * V);
    }
    const completions = draws.completions(prompts.length, group);
    return completions;
  }

  /**
   * Completion log-probabilities without gradients: each distinct prompt prefilled once, its completions then run as
   * one batch attending to its cache (completion tokens 0 … L-2 are inputs, as models/builtin/scoring.ts lays them).
   */
  tokenLogProbs(items: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    for (const it of items) this.checkLength(it.prompt.tokens.length, it.completion.length);
    const { arch, tokenizer } = this.policy;
    const V = arch.vocabSize;
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
      let max = -Infinity;
      for (let v = 0; v < V; v++) max = Math.max(max, row[v] / T);
      let z = 0;
      for (let v = 0; v < V; v++) z += Math.exp(row[v] / T - max);
      const logZ = max + Math.log(z);
      logp[o] = row[target] / T - logZ;
      if (options.withEntropy) {
        let h = 0;
        for (let v = 0; v < V; v++) {
          const lp = row[v] / T - logZ;
          h -= Math.exp(lp) * lp;
        }
        entropy[o] = h;
      }
    };
    for (const [prompt, members] of byPrompt) {
      const Lu = Math.max(...members.map((b) => items[b].completion.length));
      if (Lu === 0) continue;
      const padded = this.padPrompts([prompt]);
      const { cache, logits: first } = this.prefill(padded, useLora);
      const lastRow = first.subarray((padded.lengths[0] - 1) * V, padded.lengths[0] * V);
      const C = Lu - 1;
      const n = members.length;
      let rest: Float32Array | null = null;
      if (C > 0) {
        const tokens = new Int32Array(n * C).fill(tokenizer.pad);
        const positions = new Int32Array(n * C);
        members.forEach((b, row) => {
          const completion = items[b].completion;
          const cursor = padded.ends[0].clone();
          for (let j = 0; j < C; j++) {
            if (j < completion.length - 1) tokens[row * C + j] = completion[j];
            positions[row * C + j] = cursor.push(tokens[row * C + j]);
          }
        });
        rest = this.model.forward({ rows: n, seq: C, tokens, positions, useLora, prompt: { cache, valid: new Int32Array(n).fill(padded.lengths[0]) } }).logits;
      }
      members.forEach((b, row) => {
        items[b].completion.forEach((t, j) => {
          if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
          const logits = j === 0 ? lastRow : rest!.subarray((row * C + j - 1) * V, (row * C + j) * V);
          score(logits, t, b * L + j);
          mask[b * L + j] = 1;
        });
      });
    }
    return {
      logProbs: tf.tensor2d(logp, [B, L]),
      mask: tf.tensor2d(mask, [B, L]),
      ...(options.withEntropy ? { entropy: tf.tensor2d(entropy, [B, L]) } : {}),
    };
  }

  dispose(): void {
    this.model.dispose();
  }
}
