// A decoding loop's KV caches on the host, in two buffers that take turns. A decode step fetches from ORT only the
// new positions' keys and values (the decoder graph's new_key / new_value outputs) and appends them here to the past,
// into the buffer the previous step did not write: no cache-sized array is allocated per step. Fetching the whole
// present_* caches instead made ONNX Runtime's Node binding copy every cache into a fresh ArrayBuffer each step
// (also when given a buffer to write into), and those allocations set off a V8 garbage collection nearly every step,
// on the main thread, which no intra-op thread shares. Only the loop that owns the ring may use its caches, and a
// cache returned by append is valid until the append after next (which reuses its buffer).
import type { Tensor } from 'onnxruntime-common';
import { floatTensor } from '../session.ts';

/** Keys and values of every cached position, per layer [B, nkv, length, d] (hf-session.ts's HfOrtCache on the host). */
interface HostCache {
  rows: number;
  length: number;
  k: Tensor[];
  v: Tensor[];
}

export class HostCacheRing {
  /** buffers[turn][layer]: keys then values, each grown on demand (with room for the next steps). */
  private readonly buffers: [Float32Array[], Float32Array[]] = [[], []];
  private turn = 0;

  /** `past` extended by S new positions: newK[i], newV[i] [B, nkv, S, d], into the buffers of this turn. */
  append(past: HostCache, newK: Tensor[], newV: Tensor[]): HostCache {
    const buffers = this.buffers[this.turn];
    this.turn = 1 - this.turn;
    const L = past.k.length;
    const join = (slot: number, old: Tensor, added: Tensor): Tensor => {
      const [B, nkv, P, d] = old.dims as number[];
      const S = added.dims[2] as number;
      const K = P + S;
      const size = B * nkv * K * d;
      let buffer = buffers[slot];
      // Room for 64 more positions than asked: one allocation per 64 decode steps at most, not one per step.
      if (!buffer || buffer.length < size) buffer = buffers[slot] = new Float32Array(B * nkv * (K + 64) * d);
      const out = buffer.subarray(0, size);
      const from = old.data as Float32Array;
      const add = added.data as Float32Array;
      // [B, nkv, P, d] ++ [B, nkv, S, d] along positions: each (row, head) block is P·d old values then S·d new.
      for (let bh = 0; bh < B * nkv; bh++) {
        out.set(from.subarray(bh * P * d, (bh + 1) * P * d), bh * K * d);
        out.set(add.subarray(bh * S * d, (bh + 1) * S * d), (bh * K + P) * d);
      }
      return floatTensor(out, [B, nkv, K, d]);
    };
    return {
      rows: past.rows,
      length: past.length + (newK[0]?.dims[2] as number),
      k: past.k.map((t, i) => join(i, t, newK[i])),
      v: past.v.map((t, i) => join(L + i, t, newV[i])),
    };
  }
}
