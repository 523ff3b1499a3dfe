// Shell game episodes: the ball starts under shell 1, 2 or 3 (uniform), then T swaps, each one of the three pairs
// (uniform), written "x swap y" with x < y. The target is the ball's final shell.
import { UserError } from '../../core/errors.ts';
import type { Rng } from '../../core/rng.ts';
import type { Candidate, SampleOptions } from '../env.ts';
import type { Swap } from './render.ts';

export const SWAP_PAIRS: readonly Swap[] = [
  [1, 2],
  [1, 3],
  [2, 3],
];

export function swapText([a, b]: Swap): string {
  return `${a} swap ${b}`;
}

/** Where the ball is after one swap. */
export function applySwap(ball: number, [a, b]: Swap): number {
  return ball === a ? b : ball === b ? a : ball;
}

/** Chess's --games and --offset mean nothing here: say so instead of silently ignoring them. */
const CHESS_ONLY_OPTIONS = ['games', 'offset'];

function rejectExtras(extra: Record<string, unknown>): void {
  const given = CHESS_ONLY_OPTIONS.find((name) => extra[name] !== undefined);
  if (given) throw new UserError(`shell: option --${given} does not apply to the shell game`);
}

export function* shellCandidates(rng: Rng, options: SampleOptions): Generator<Candidate> {
  rejectExtras(options.extra);
  for (;;) {
    const start = rng.range(1, 3);
    let ball = start;
    let ballMoves = 0;
    const actionTexts: string[] = [];
    for (let t = 0; t < options.actions; t++) {
      const swap = rng.pick(SWAP_PAIRS);
      actionTexts.push(swapText(swap));
      const next = applySwap(ball, swap);
      if (next !== ball) ballMoves++;
      ball = next;
    }
    yield { initialState: String(start), actionTexts, target: String(ball), meta: { ballMoves } };
  }
}
