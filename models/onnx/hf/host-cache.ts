// A decoding loop's KV caches on the host, per layer a [rows, nkv, C, d] buffer of a fixed capacity C (the prompt
// plus the loop's new tokens). The host decoder graph (hf-graph.ts) reads the buffers in place, the unfilled positions
// blocked by the mask, and returns only the new positions' keys and values, which write() puts after the filled ones:
// per decode step nothing cache-sized is allocated, concatenated or copied, in ORT or here. (A cache grown by one
// position a step is a copy of the whole cache a step: for a 2 B-parameter model's 8 rows of a 1,000-token image
// prompt, about 2 GB a step.)
import type { Tensor } from 'onnxruntime-common';
import { MASKED } from '../../layers/attention.ts';
import { floatTensor } from '../session.ts';

/** Keys (RoPE applied) and values of every cached position, per layer [B, nkv, length, d] (an HfOrtCache on the host). */
interface HostCacheTensors {
  rows: number;
  length: number;
  k: Tensor[];
  v: Tensor[];
}

export class HostCache {
  /** Positions filled. */
  length: number;
  private readonly dims: [number, number, number, number];
  private readonly k: Float32Array[];
  private readonly v: Float32Array[];

  /**
   * The buffers of a loop of `rows` rows with room for `capacity` positions, filled with a prompt cache: loop row i
   * starts from row rowOf(i) of `prompt`.
   */
  constructor(prompt: HostCacheTensors, rowOf: (row: number) => number, rows: number, capacity: number) {
    const [U, nkv, P, d] = prompt.k[0].dims as [number, number, number, number];
    if (capacity < P) throw new Error(`internal: cache capacity ${capacity} below the prompt's ${P} positions`);
    // [U, nkv, P, d] into [rows, nkv, C, d]: each (row, head) block's P·d values at the start of its C·d.
    const fill = (t: Tensor) => {
      const from = t.data as Float32Array;
      const out = new Float32Array(rows * nkv * capacity * d);
      for (let b = 0; b < rows; b++) {
        const u = rowOf(b);
        if (!(u >= 0 && u < U)) throw new Error(`internal: cache row ${b} from prompt row ${u} of ${U}`);
        for (let h = 0; h < nkv; h++)
          out.set(from.subarray((u * nkv + h) * P * d, (u * nkv + h + 1) * P * d), (b * nkv + h) * capacity * d);
      }
      return out;
    };
    this.length = P;
    this.dims = [rows, nkv, capacity, d];
    this.k = prompt.k.map(fill);
    this.v = prompt.v.map(fill);
  }

  get rows(): number {
    return this.dims[0];
  }

  get capacity(): number {
    return this.dims[2];
  }

  /** Layer i's buffers as the graph's past_key / past_value [rows, nkv, C, d]. */
  past(i: number): { k: Tensor; v: Tensor } {
    return { k: floatTensor(this.k[i], this.dims), v: floatTensor(this.v[i], this.dims) };
  }

  /**
   * An additive mask [rows, 1, S, length + S] (the filled positions, then S new ones) laid out for the buffers:
   * [rows, 1, S, C + S], the unfilled positions blocked.
   */
  layOut(mask: Tensor): Tensor {
    const [B, , S, K] = mask.dims as number[];
    const P = this.length;
    const C = this.capacity;
    if (K !== P + S) throw new Error(`internal: a mask over ${K} keys for ${P} cached positions and ${S} new`);
    if (P + S > C) throw new Error(`internal: ${P + S} positions past the cache's capacity of ${C}`);
    const from = mask.data as Float32Array;
    const out = new Float32Array(B * S * (C + S)).fill(MASKED);
    for (let r = 0; r < B * S; r++) {
      out.set(from.subarray(r * K, r * K + P), r * (C + S));
      out.set(from.subarray(r * K + P, (r + 1) * K), r * (C + S) + C);
    }
    return floatTensor(out, [B, 1, S, C + S]);
  }

  /** Write a run's new keys and values of every layer ([rows, nkv, S, d] each) after the filled positions. */
  write(newK: Tensor[], newV: Tensor[]): void {
    const [rows, nkv, C, d] = this.dims;
    const S = newK[0].dims[2] as number;
    const put = (into: Float32Array, t: Tensor) => {
      const added = t.data as Float32Array;
      for (let bh = 0; bh < rows * nkv; bh++)
        into.set(added.subarray(bh * S * d, (bh + 1) * S * d), (bh * C + this.length) * d);
    };
    newK.forEach((t, i) => put(this.k[i], t));
    newV.forEach((t, i) => put(this.v[i], t));
    this.length += S;
  }
}
