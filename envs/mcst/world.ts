// The MCST world simulator (paper §3.1, Appendix B.3): who holds which object (entities carry at most `capacity`
// objects), where the other objects are, and at levels 3-5 each entity's grid position and facing. Actions are legal
// in the state they apply to, negated ones included (paper: a negated action must be one that would have changed the
// state); a negated action leaves the state unchanged. Wording lives in text.ts.
//
// Decisions where the paper is open:
// - Grid coordinates are (x, y) with x = 1..N from west to east and y = 1..N from south to north; moves are compass
//   moves ("moves 2 steps north") or forward moves along the facing; turns are 90° left or right. Moves stay inside
//   the grid (the paper's "grid boundary" constraint); several entities may share a square.
// - Picking up or placing does not require being at the place (places are not on the grid), which keeps the
//   inventory and spatial constraints interacting only through the question mix, as in the paper's examples.
import type { Rng } from '../../core/rng.ts';

export const DIRECTIONS = ['north', 'east', 'south', 'west'] as const;
type Direction = (typeof DIRECTIONS)[number];
const STEP: Record<Direction, [number, number]> = { north: [0, 1], east: [1, 0], south: [0, -1], west: [-1, 0] };

/** Where an object is: held by an entity, or at a place. */
type Holder = { entity: string } | { place: string };

export interface McstState {
  /** object → holder */
  where: Record<string, Holder>;
  /** entity → grid position and facing (grid levels only). */
  grid: Record<string, { x: number; y: number; facing: Direction }>;
}

export interface World {
  entities: string[];
  objects: string[];
  places: string[];
  capacity: number;
  /** Grid side length, 0 without a grid. */
  gridSize: number;
}

export type ActionBody =
  | { kind: 'pick'; entity: string; object: string; from: string }
  | { kind: 'place'; entity: string; object: string; to: string }
  | { kind: 'give'; entity: string; object: string; to: string }
  | { kind: 'move'; entity: string; direction: Direction; steps: number }
  | { kind: 'forward'; entity: string; steps: number }
  | { kind: 'turn'; entity: string; side: 'left' | 'right' };

type ActionKind = ActionBody['kind'];

// Hot paths (legality checks run hundreds of times per action) use plain loops: no closures allocated per call.
export function inventory(state: McstState, entity: string): string[] {
  const out: string[] = [];
  for (const o in state.where) {
    const h = state.where[o];
    if ('entity' in h && h.entity === entity) out.push(o);
  }
  return out;
}

function inventorySize(state: McstState, entity: string): number {
  let n = 0;
  for (const o in state.where) {
    const h = state.where[o];
    if ('entity' in h && h.entity === entity) n++;
  }
  return n;
}

export function objectsAt(state: McstState, place: string): string[] {
  const out: string[] = [];
  for (const o in state.where) {
    const h = state.where[o];
    if ('place' in h && h.place === place) out.push(o);
  }
  return out;
}

function turned(facing: Direction, side: 'left' | 'right'): Direction {
  const i = DIRECTIONS.indexOf(facing);
  return DIRECTIONS[(i + (side === 'right' ? 1 : 3)) % 4];
}

function destination(state: McstState, entity: string, direction: Direction, steps: number): { x: number; y: number } {
  const { x, y } = state.grid[entity];
  const [dx, dy] = STEP[direction];
  return { x: x + dx * steps, y: y + dy * steps };
}

function inGrid(world: World, p: { x: number; y: number }): boolean {
  return p.x >= 1 && p.y >= 1 && p.x <= world.gridSize && p.y <= world.gridSize;
}

export function isLegal(world: World, state: McstState, a: ActionBody): boolean {
  switch (a.kind) {
    case 'pick': {
      const h = state.where[a.object];
      return h !== undefined && 'place' in h && h.place === a.from && inventorySize(state, a.entity) < world.capacity;
    }
    case 'place': {
      const h = state.where[a.object];
      return h !== undefined && 'entity' in h && h.entity === a.entity && world.places.includes(a.to);
    }
    case 'give': {
      const h = state.where[a.object];
      return (
        h !== undefined &&
        'entity' in h &&
        h.entity === a.entity &&
        a.to !== a.entity &&
        inventorySize(state, a.to) < world.capacity
      );
    }
    case 'move':
      return world.gridSize > 0 && a.steps > 0 && inGrid(world, destination(state, a.entity, a.direction, a.steps));
    case 'forward':
      return (
        world.gridSize > 0 &&
        a.steps > 0 &&
        inGrid(world, destination(state, a.entity, state.grid[a.entity].facing, a.steps))
      );
    case 'turn':
      return world.gridSize > 0;
  }
}

function cloneState(state: McstState): McstState {
  return {
    where: { ...state.where },
    grid: Object.fromEntries(Object.entries(state.grid).map(([k, v]) => [k, { ...v }])),
  };
}

/** The state after executing `a` (which must be legal). */
export function applyAction(state: McstState, a: ActionBody): McstState {
  const next = cloneState(state);
  switch (a.kind) {
    case 'pick':
      next.where[a.object] = { entity: a.entity };
      break;
    case 'place':
      next.where[a.object] = { place: a.to };
      break;
    case 'give':
      next.where[a.object] = { entity: a.to };
      break;
    case 'move':
      next.grid[a.entity] = {
        ...destination(state, a.entity, a.direction, a.steps),
        facing: state.grid[a.entity].facing,
      };
      break;
    case 'forward':
      next.grid[a.entity] = {
        ...destination(state, a.entity, state.grid[a.entity].facing, a.steps),
        facing: state.grid[a.entity].facing,
      };
      break;
    case 'turn':
      next.grid[a.entity] = { ...state.grid[a.entity], facing: turned(state.grid[a.entity].facing, a.side) };
      break;
  }
  return next;
}

/** Relative weights of action kinds when several are legal. */
const KIND_WEIGHTS: Record<ActionKind, number> = { pick: 3, place: 2.5, give: 1.5, move: 1.5, forward: 1, turn: 1 };

/** Every action legal in `state` (and in `alsoIn`, when given), grouped by kind. */
function legalActions(world: World, state: McstState, alsoIn: McstState | null): Map<ActionKind, ActionBody[]> {
  const out = new Map<ActionKind, ActionBody[]>();
  const add = (a: ActionBody) => {
    if (!isLegal(world, state, a) || (alsoIn !== null && !isLegal(world, alsoIn, a))) return;
    const list = out.get(a.kind) ?? [];
    list.push(a);
    out.set(a.kind, list);
  };
  for (const object of world.objects) {
    const h = state.where[object];
    if ('place' in h) for (const entity of world.entities) add({ kind: 'pick', entity, object, from: h.place });
    else {
      for (const to of world.places) add({ kind: 'place', entity: h.entity, object, to });
      for (const to of world.entities) add({ kind: 'give', entity: h.entity, object, to });
    }
  }
  if (world.gridSize > 0) {
    for (const entity of world.entities) {
      for (const direction of DIRECTIONS)
        for (let steps = 1; steps <= 3; steps++) add({ kind: 'move', entity, direction, steps });
      for (let steps = 1; steps <= 3; steps++) add({ kind: 'forward', entity, steps });
      add({ kind: 'turn', entity, side: 'left' });
      add({ kind: 'turn', entity, side: 'right' });
    }
  }
  return out;
}

/**
 * A random legal action: a kind by weight among the legal kinds, then an action of that kind uniformly. With
 * `alsoIn` (the negation-blind state), only actions legal in both states are drawn when there are any, so that the
 * negation-blind reading of the scenario stays a consistent story with its own answer.
 */
export function sampleAction(
  rng: Rng,
  world: World,
  state: McstState,
  alsoIn: McstState | null = null,
): ActionBody | null {
  let legal = legalActions(world, state, alsoIn);
  if (legal.size === 0 && alsoIn !== null) legal = legalActions(world, state, null);
  const kinds = [...legal.keys()];
  if (kinds.length === 0) return null;
  const kind = kinds[rng.weighted(kinds.map((k) => KIND_WEIGHTS[k]))];
  return rng.pick(legal.get(kind)!);
}
