// The model side of a rollout for some of its prompts (models/ layer, ONNX Runtime engine): prefill, then one decode
// step per drawn token, with each row's own key/value cache kept here. The sampler (ort-sampler.ts) draws the tokens
// for every row itself, in the single-session order, and gives each part its rows' tokens; a part runs on the main
// thread or in a worker (ort-worker-main.ts), so the prompts of a rollout decode on several cores while the draws,
// and so the samples, stay those of one session. Prompts are padded to the whole rollout's longest prompt, so a part's
// rows see exactly the shapes and masks they would in one batch.
import { headDim } from '../builtin/config.ts';
import type { BuiltinOrtModel, KVCache, PatchSlot } from './builtin-session.ts';

/** Prompts right-padded to `length` (at least the longest) with positions and image slots (rows within the part). */
export interface PartPrompts {
  count: number;
  length: number;
  tokens: Int32Array;
  positions: Int32Array;
  slots: PatchSlot[];
  lengths: number[];
}

/** Own-cache capacity grows in steps of this many positions (unfilled ones are masked). */
const OWN_CHUNK = 16;

export class RolloutPart {
  /** Own-cache buffers (k and v per layer), kept across rollouts (fresh arrays cost more in page faults than a step). */
  private buffers: { k: Float32Array[]; v: Float32Array[] } | null = null;
  private state: {
    group: number;
    cache: KVCache;
    valid: Int32Array;
    slots: number;
    own: { k: Float32Array[]; v: Float32Array[]; capacity: number; filled: number };
  } | null = null;

  constructor(readonly model: BuiltinOrtModel) {}

  private ownBuffers(size: number): { k: Float32Array[]; v: Float32Array[] } {
    const layers = this.model.arch.nLayers;
    if (!this.buffers || this.buffers.k[0].length < size) {
      this.buffers = { k: Array.from({ length: layers }, () => new Float32Array(size)), v: Array.from({ length: layers }, () => new Float32Array(size)) };
    }
    return this.buffers;
  }

  /** Prefill the prompts (with LoRA) and make room for `maxNewTokens`; returns each prompt's next-token logits [count, V]. */
  start(prompts: PartPrompts, group: number, maxNewTokens: number): Float32Array {
    const { arch } = this.model;
    const V = arch.vocabSize;
    const { count: U, length: P } = prompts;
    const out = this.model.forward({ rows: U, seq: P, tokens: prompts.tokens, positions: prompts.positions, slots: prompts.slots, useLora: true });
    const last = new Float32Array(U * V);
    for (let u = 0; u < U; u++) last.set(out.logits.subarray((u * P + prompts.lengths[u] - 1) * V, (u * P + prompts.lengths[u]) * V), u * V);
    // Each row's own keys/values, group-major (row r = u·G + g at slot m = (u·H + h)·G + g): k and v
    // [U·H·G, capacity, dh]; the capacity grows by OWN_CHUNK positions, re-laid out in place.
    const slots = U * group * arch.nHeads;
    const most = Math.ceil(Math.max(1, maxNewTokens - 1) / OWN_CHUNK) * OWN_CHUNK;
    this.ownBuffers(slots * most * headDim(arch));
    this.state = {
      group,
      cache: { count: U, length: P, k: out.keys, v: out.values },
      valid: Int32Array.from(prompts.lengths),
      slots,
      own: { k: [], v: [], capacity: 0, filled: 0 },
    };
    return last;
  }

  private grow(capacity: number): void {
    const { own, slots } = this.state!;
    const dh = headDim(this.model.arch);
    const buffers = this.buffers!;
    const old = own.capacity;
    for (const buffer of [...buffers.k, ...buffers.v]) {
      // Last slot first: slot m moves up to m·capacity·dh, never onto a lower slot's data not yet moved.
      for (let m = slots - 1; m >= 0; m--) buffer.copyWithin(m * capacity * dh, m * old * dh, (m * old + own.filled) * dh);
    }
    own.capacity = capacity;
    own.k = buffers.k.map((b) => b.subarray(0, slots * capacity * dh));
    own.v = buffers.v.map((b) => b.subarray(0, slots * capacity * dh));
  }

  /** Decode step `step` (0, 1, …): one token per row at its position; returns the rows' next logits [rows, V]. */
  step(step: number, tokens: Int32Array, positions: Int32Array): Float32Array {
    const state = this.state;
    if (!state) throw new Error('rollout part: step before start');
    const { arch } = this.model;
    const dh = headDim(arch);
    const { own, slots } = state;
    if (step >= own.capacity) this.grow(own.capacity + OWN_CHUNK);
    const out = this.model.decodeStep({ group: state.group, tokens, positions, useLora: true, prompt: { cache: state.cache, valid: state.valid }, own });
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
    return out.logits;
  }

  /** Drops the rollout's caches (the buffers stay for the next). */
  finish(): void {
    this.state = null;
  }
}
