// The order in which training episodes are visited: shuffled epochs over the fixed training set, each epoch's
// permutation derived from the seed and the epoch number. The state (epoch, position) is tiny and saved in every
// checkpoint, so a resumed run sees the same prompts in the same order as an uninterrupted one.
import { z } from 'zod';
import { Rng } from '../core/rng.ts';

export const DataOrderStateSchema = z
  .object({ epoch: z.number().int().min(0), cursor: z.number().int().min(0) })
  .strict();
export type DataOrderState = z.infer<typeof DataOrderStateSchema>;

export class DataOrder {
  private epoch = 0;
  private cursor = 0;
  private permutation: number[];

  constructor(
    private readonly size: number,
    private readonly seed: number,
  ) {
    if (size < 1) throw new RangeError('DataOrder needs at least one item');
    this.permutation = this.permutationOf(0);
  }

  private permutationOf(epoch: number): number[] {
    return new Rng(this.seed, 'data-order', epoch).shuffle(Array.from({ length: this.size }, (_, i) => i));
  }

  /** The next `k` indices, moving into the next epoch (a fresh shuffle) when this one is used up. */
  take(k: number): number[] {
    const out: number[] = [];
    while (out.length < k) {
      if (this.cursor >= this.size) {
        this.epoch++;
        this.cursor = 0;
        this.permutation = this.permutationOf(this.epoch);
      }
      out.push(this.permutation[this.cursor++]);
    }
    return out;
  }

  state(): DataOrderState {
    return { epoch: this.epoch, cursor: this.cursor };
  }

  restore(state: DataOrderState): void {
    this.epoch = state.epoch;
    this.cursor = state.cursor;
    this.permutation = this.permutationOf(state.epoch);
  }
}
