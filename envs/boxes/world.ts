// The boxes world of Kim & Schuster: 7 boxes holding at most 3 objects each, and the operations Move / Remove / Put
// (plus Move-contents for the MoveContents split). This module is the simulator: it samples initial states and valid
// operations and applies them. Wording lives in text.ts.
//
// Decisions where the paper is open:
// - Initial box sizes are drawn with P(0, 1, 2, 3) = (0.10, 0.25, 0.30, 0.35): about 1.9 objects per box, close to
//   the paper's e = 2 while leaving room for Put and Move.
// - Operation kinds are drawn uniformly among those valid in the current state (Move-contents, where enabled, as often
//   as each of the others); Remove and Put take two objects with probability 0.35 (if possible), else one.
// - Put draws from objects not currently in any box, so a removed object may come back later.
import type { Rng } from '../../core/rng.ts';

export const BOX_COUNT = 7;
const BOX_CAPACITY = 3;
const INITIAL_SIZE_WEIGHTS = [0.1, 0.25, 0.3, 0.35];
const TWO_OBJECT_PROBABILITY = 0.35;

/** An object: a noun, with an adjective in the AmbiRef split ("big bell"). Objects in a scenario are distinct. */
export interface BoxObject {
  noun: string;
  adjective?: string;
}

export type Operation =
  | { kind: 'move'; object: BoxObject; from: number; to: number }
  | { kind: 'remove'; objects: BoxObject[]; from: number }
  | { kind: 'put'; objects: BoxObject[]; to: number }
  | { kind: 'move-contents'; objects: BoxObject[]; from: number; to: number };

type OperationKind = Operation['kind'];

/** Box contents, box index → objects. */
export type BoxesState = BoxObject[][];

export function objectName(o: BoxObject): string {
  return o.adjective ? `${o.adjective} ${o.noun}` : o.noun;
}

function sameObject(a: BoxObject, b: BoxObject): boolean {
  return a.noun === b.noun && a.adjective === b.adjective;
}

/** The initial-state signature of the paper: objects per box, e.g. "2111111". */
export function signature(state: BoxesState): string {
  return state.map((b) => b.length).join('');
}

function cloneState(state: BoxesState): BoxesState {
  return state.map((b) => b.slice());
}

/** Apply an operation to a copy of the state; returns the boxes it changed. */
export function applyOperation(state: BoxesState, op: Operation): { state: BoxesState; changed: number[] } {
  const next = cloneState(state);
  const without = (box: number, objects: BoxObject[]) => {
    next[box] = next[box].filter((o) => !objects.some((x) => sameObject(o, x)));
  };
  switch (op.kind) {
    case 'move':
      without(op.from, [op.object]);
      next[op.to].push(op.object);
      return { state: next, changed: [op.from, op.to] };
    case 'remove':
      without(op.from, op.objects);
      return { state: next, changed: [op.from] };
    case 'put':
      next[op.to].push(...op.objects);
      return { state: next, changed: [op.to] };
    case 'move-contents':
      without(op.from, op.objects);
      next[op.to].push(...op.objects);
      return { state: next, changed: [op.from, op.to] };
  }
}

/** A random initial state from a pool of distinct objects (the pool must hold at least 21). */
export function sampleInitialState(rng: Rng, pool: readonly BoxObject[]): BoxesState {
  const shuffled = rng.shuffle(pool);
  let next = 0;
  return Array.from({ length: BOX_COUNT }, () => {
    const size = rng.weighted(INITIAL_SIZE_WEIGHTS);
    const box = shuffled.slice(next, next + size);
    next += size;
    return box;
  });
}

/** A valid operation in `state`, or null when none is possible. `pool` is every object of the scenario. */
export function sampleOperation(
  rng: Rng,
  state: BoxesState,
  pool: readonly BoxObject[],
  allowMoveContents: boolean,
): Operation | null {
  const boxes = state.map((_, i) => i);
  const nonEmpty = boxes.filter((b) => state[b].length > 0);
  const withSpace = boxes.filter((b) => state[b].length < BOX_CAPACITY);
  const inBoxes = new Set(state.flat().map(objectName));
  const outside = pool.filter((o) => !inBoxes.has(objectName(o)));
  const moveContentsPairs: Array<[number, number]> = [];
  if (allowMoveContents) {
    for (const from of nonEmpty) {
      for (const to of boxes)
        if (to !== from && state[to].length + state[from].length <= BOX_CAPACITY) moveContentsPairs.push([from, to]);
    }
  }
  const kinds: OperationKind[] = [];
  if (nonEmpty.some((f) => withSpace.some((t) => t !== f))) kinds.push('move');
  if (nonEmpty.length > 0) kinds.push('remove');
  if (withSpace.length > 0 && outside.length > 0) kinds.push('put');
  if (moveContentsPairs.length > 0) kinds.push('move-contents');
  if (kinds.length === 0) return null;
  const kind = rng.pick(kinds);
  const howMany = (max: number) => (max >= 2 && rng.bool(TWO_OBJECT_PROBABILITY) ? 2 : 1);
  switch (kind) {
    case 'move': {
      const from = rng.pick(nonEmpty.filter((f) => withSpace.some((t) => t !== f)));
      const to = rng.pick(withSpace.filter((t) => t !== from));
      return { kind, object: rng.pick(state[from]), from, to };
    }
    case 'remove': {
      const from = rng.pick(nonEmpty);
      return { kind, objects: rng.sample(state[from], howMany(state[from].length)), from };
    }
    case 'put': {
      const to = rng.pick(withSpace);
      // Distinct picks by index: cheaper than shuffling the whole (up to 100-object) pool.
      const k = howMany(Math.min(outside.length, BOX_CAPACITY - state[to].length));
      const first = rng.int(outside.length);
      if (k === 1) return { kind, objects: [outside[first]], to };
      let second = rng.int(outside.length - 1);
      if (second >= first) second++;
      return { kind, objects: [outside[first], outside[second]], to };
    }
    case 'move-contents': {
      const [from, to] = rng.pick(moveContentsPairs);
      return { kind, objects: state[from].slice(), from, to };
    }
  }
}
