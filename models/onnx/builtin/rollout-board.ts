// The shared board of a rollout split into parts (read and written by
// rollout-part.ts on the main thread and in workers). A part draws its own rows, so it must know where its draws
// start in the rollout's one Rng stream: the single session draws step by step, every unfinished row in row order,
// one value each (none when greedy). So part k's draws at step s start after every draw of the steps before and
// those of the parts before it at step s, and each part publishes, after its draws of step s, how many of its rows
// are still unfinished (they draw at step s + 1). A part waits only for what it reads: the parts before it one step
// behind at most, the parts after it two; never for another part's decode, so the parts decode on their cores
// without meeting at every step (the lock-step split paid a hand-over and a wake-up per step, and left the worker
// idle while the main thread drew).
// Layout (Int32Array on a SharedArrayBuffer): [0, n) each part's published step (its unfinished counts up to that
// step are on the board; DONE when it has stopped), then n blocks of steps + 1 counts, u_k(0 … steps).

export class RolloutBoard {
  readonly parts: number;
  readonly steps: number;
  /** A part that has stopped publishes this step: its later counts stay 0. */
  private readonly DONE: number;

  constructor(
    readonly cells: Int32Array,
    parts: number,
    steps: number,
  ) {
    if (cells.length !== parts * (steps + 2))
      throw new Error('rollout board: its size does not match its parts and steps');
    this.parts = parts;
    this.steps = steps;
    this.DONE = steps + 1;
  }

  /** A fresh board for parts of `rows` rows each and at most `steps` draws: every row drawing at step 0. */
  static create(rows: number[], steps: number): RolloutBoard {
    const n = rows.length;
    const board = new RolloutBoard(new Int32Array(new SharedArrayBuffer(4 * n * (steps + 2))), n, steps);
    rows.forEach((count, k) => (board.cells[board.at(k, 0)] = count));
    return board;
  }

  private at(part: number, step: number): number {
    return this.parts + part * (this.steps + 1) + step;
  }

  /** Part `part`'s unfinished rows at `step` (read once the part has published it: see waitFor). */
  unfinished(part: number, step: number): number {
    return Atomics.load(this.cells, this.at(part, step));
  }

  /** Part `part` has `count` rows unfinished at `step` (after its draws of step − 1). */
  publish(part: number, step: number, count: number): void {
    Atomics.store(this.cells, this.at(part, step), count);
    Atomics.store(this.cells, part, step);
    Atomics.notify(this.cells, part);
  }

  /** Part `part` has stopped (every row finished, the last step drawn, or an error): nobody waits for it again. */
  done(part: number): void {
    Atomics.store(this.cells, part, this.DONE);
    Atomics.notify(this.cells, part);
  }

  /** Blocks until part `part` has published its count of `step` (at once for step ≤ 0). */
  waitFor(part: number, step: number): void {
    for (;;) {
      const published = Atomics.load(this.cells, part);
      if (published >= step) return;
      Atomics.wait(this.cells, part, published, 100);
    }
  }

  /** The Rng values the draws of steps 0 … steps − 1 took in all, `perDraw` each (once every part is done). */
  valuesDrawn(perDraw: number): number {
    let total = 0;
    for (let k = 0; k < this.parts; k++) for (let s = 0; s < this.steps; s++) total += this.unfinished(k, s);
    return total * perDraw;
  }
}
