// REM worlds and trajectories: objects (cuboid, sphere, cone × eight colours) standing on a floor, an agent that moves
// forward 1 m or rotates 15° in place, and the three layouts of the paper: Baseline (a random scatter walked through
// with runs of forward moves and runs of turns), Single Frame (one view of a crowded wedge) and Full Rotation (24
// views turning in place, where the view after 180° mirrors the first one with different objects except 1-2
// duplicated targets). The camera pose of every frame follows from the start pose and the move texts alone.
import { UserError } from '../../core/errors.ts';
import type { Rng } from '../../core/rng.ts';

export const REM_SHAPES = ['cuboid', 'sphere', 'cone'] as const;
export const REM_COLORS = ['brown', 'yellow', 'red', 'green', 'blue', 'purple', 'black', 'orange'] as const;
type RemShape = (typeof REM_SHAPES)[number];
export type RemColor = (typeof REM_COLORS)[number];

export const MOVE_FORWARD = 'move forward 1m';
export const ROTATE_LEFT = 'rotate left 15°';
export const ROTATE_RIGHT = 'rotate right 15°';
/** The text of frame 1's action: no move has been made yet. */
export const START = 'start';
export type Move = typeof MOVE_FORWARD | typeof ROTATE_LEFT | typeof ROTATE_RIGHT;

export interface RemObject {
  shape: RemShape;
  color: RemColor;
  x: number;
  y: number;
  /** Cuboid yaw in degrees (spheres and cones are round). */
  yaw: number;
}

export interface Pose {
  x: number;
  y: number;
  /** Degrees, counter-clockwise from +x; rotate left adds 15. */
  heading: number;
}

export interface RemWorld {
  objects: RemObject[];
  start: Pose;
}

/** Object sizes (metres): all instances of a type are identical, so duplicates look alike. */
export const CUBOID_HALF = 0.4;
export const CUBOID_HEIGHT = 0.8;
export const SPHERE_RADIUS = 0.4;
export const CONE_RADIUS = 0.42;
export const CONE_HEIGHT = 0.95;
/** The agent never comes closer than this to an object's centre. */
const CLEARANCE = 1.0;
const MIN_SPACING = 1.3;

export function typeKey(o: { color: string; shape: string }): string {
  return `${o.color} ${o.shape}`;
}

const ALL_TYPES = REM_COLORS.flatMap((color) => REM_SHAPES.map((shape) => ({ color, shape })));

function applyMove(pose: Pose, move: string): Pose {
  switch (move) {
    case MOVE_FORWARD: {
      const r = (pose.heading * Math.PI) / 180;
      return { x: pose.x + Math.cos(r), y: pose.y + Math.sin(r), heading: pose.heading };
    }
    case ROTATE_LEFT:
      return { ...pose, heading: pose.heading + 15 };
    case ROTATE_RIGHT:
      return { ...pose, heading: pose.heading - 15 };
    case START:
      return pose;
    default:
      throw new UserError(
        `rem: unknown move ${JSON.stringify(move)} (expected "${MOVE_FORWARD}", "${ROTATE_LEFT}" or "${ROTATE_RIGHT}")`,
      );
  }
}

/** Camera pose of every frame; actionTexts[0] is START, actionTexts[i] the move that led to frame i. */
export function framePoses(world: RemWorld, actionTexts: readonly string[]): Pose[] {
  const poses: Pose[] = [];
  let pose = world.start;
  for (const text of actionTexts) {
    pose = applyMove(pose, text);
    poses.push(pose);
  }
  return poses;
}

/** Types for `count` objects with `duplicates` of them repeating a type already used. */
function drawTypes(rng: Rng, count: number, duplicates: number): { color: RemColor; shape: RemShape }[] {
  const [lo, hi] = duplicateBounds(count);
  if (!(duplicates >= lo && duplicates <= hi))
    throw new RangeError(`rem: ${duplicates} duplicates among ${count} objects (allowed ${lo}-${hi})`);
  const distinct = rng.sample(ALL_TYPES, count - duplicates);
  const extra = Array.from({ length: duplicates }, () => rng.pick(distinct));
  return rng.shuffle([...distinct, ...extra]);
}

function spaced(points: { x: number; y: number }[], x: number, y: number): boolean {
  return points.every((p) => (p.x - x) ** 2 + (p.y - y) ** 2 >= MIN_SPACING ** 2);
}

/** Valid duplicate counts for a number of objects: at most 24 distinct types, at least 2. */
export function duplicateBounds(count: number): [number, number] {
  return [Math.max(0, count - ALL_TYPES.length), count - 2];
}

/** Half side of the square the Baseline scatters objects over: about 3.5 m² per object. */
function baselineHalfSide(count: number): number {
  return Math.sqrt(3.5 * count) / 2;
}

/** Baseline: objects scattered over a square, the agent starting at a free spot among them, facing any way. */
export function baselineWorld(rng: Rng, count: number, duplicates: number): RemWorld {
  const s = baselineHalfSide(count);
  for (;;) {
    const objects: RemObject[] = [];
    for (const type of drawTypes(rng, count, duplicates)) {
      let placed = false;
      for (let t = 0; t < 400 && !placed; t++) {
        const x = -s + rng.next() * 2 * s;
        const y = -s + rng.next() * 2 * s;
        if (spaced(objects, x, y)) {
          objects.push({ ...type, x: round(x), y: round(y), yaw: rng.int(90) });
          placed = true;
        }
      }
      if (!placed) break;
    }
    if (objects.length !== count) continue;
    // Start among the objects, facing within 90° of the centre: the first view shows only part of the world, and
    // rarely the empty floor outside it.
    for (let t = 0; t < 400; t++) {
      const x = round(-s + rng.next() * 2 * s);
      const y = round(-s + rng.next() * 2 * s);
      if (objects.every((o) => (o.x - x) ** 2 + (o.y - y) ** 2 >= (CLEARANCE + 0.2) ** 2)) {
        const towardsCentre = (Math.atan2(-y, -x) * 180) / Math.PI;
        return { objects, start: { x, y, heading: 15 * Math.round((towardsCentre + (rng.next() - 0.5) * 180) / 15) } };
      }
    }
  }
}

/** Single Frame: objects in the camera's field of view, 2-`depth` m ahead. */
export function singleFrameWorld(rng: Rng, count: number, duplicates: number): RemWorld {
  const depth = Math.sqrt((2.6 * count) / 0.47 + 4);
  for (;;) {
    const objects: RemObject[] = [];
    for (const type of drawTypes(rng, count, duplicates)) {
      let placed = false;
      for (let t = 0; t < 400 && !placed; t++) {
        const r = Math.sqrt(4 + rng.next() * (depth * depth - 4));
        const a = ((90 + (rng.next() - 0.5) * 54) * Math.PI) / 180;
        const x = r * Math.cos(a);
        const y = r * Math.sin(a);
        if (spaced(objects, x, y)) {
          objects.push({ ...type, x: round(x), y: round(y), yaw: rng.int(90) });
          placed = true;
        }
      }
      if (!placed) break;
    }
    if (objects.length === count) return { objects, start: { x: 0, y: 0, heading: 90 } };
  }
}

/**
 * Full Rotation: 24 objects around the agent. Eight in front (within ±22° of the start heading), eight at the mirrored
 * positions behind, and eight at the sides (90° ± 30° either way) that keep some object in view during the turn.
 * The objects behind have types never used elsewhere, except `targets` (1 or 2) that repeat the type of their mirror
 * image in front: the duplicated targets.
 */
export function fullRotationWorld(rng: Rng, targets: number): RemWorld {
  for (;;) {
    const front: { x: number; y: number }[] = [];
    for (let t = 0; t < 400 && front.length < 8; t++) {
      const r = 2.5 + rng.next() * 4.5;
      const a = ((90 + (rng.next() - 0.5) * 44) * Math.PI) / 180;
      const p = { x: round(r * Math.cos(a)), y: round(r * Math.sin(a)) };
      if (spaced(front, p.x, p.y)) front.push(p);
    }
    const sides: { x: number; y: number }[] = [];
    for (let t = 0; t < 400 && sides.length < 8; t++) {
      const r = 2.5 + rng.next() * 4.5;
      const a = ((rng.pick([0, 180]) + (rng.next() - 0.5) * 60) * Math.PI) / 180;
      const p = { x: round(r * Math.cos(a)), y: round(r * Math.sin(a)) };
      if (
        spaced([...front, ...sides], p.x, p.y) &&
        spaced(
          front.map((f) => ({ x: -f.x, y: -f.y })),
          p.x,
          p.y,
        )
      )
        sides.push(p);
    }
    if (front.length < 8 || sides.length < 8) continue;
    const types = rng.shuffle(ALL_TYPES);
    const frontTypes = types.slice(0, 8);
    const backTypes = types.slice(8, 16 - targets);
    const sideTypes = types.slice(16 - targets, 24 - targets);
    const duplicated = rng.sample([0, 1, 2, 3, 4, 5, 6, 7], targets);
    const objects: RemObject[] = [];
    front.forEach((p, i) => objects.push({ ...frontTypes[i], ...p, yaw: rng.int(90) }));
    let next = 0;
    front.forEach((p, i) => {
      const type = duplicated.includes(i) ? frontTypes[i] : backTypes[next++];
      objects.push({ ...type, x: -p.x, y: -p.y, yaw: rng.int(90) });
    });
    sides.forEach((p, i) => objects.push({ ...sideTypes[i], ...p, yaw: rng.int(90) }));
    return { objects, start: { x: 0, y: 0, heading: 90 } };
  }
}

function round(v: number): number {
  return Math.round(v * 100) / 100;
}

/** Whether the agent may step forward from `pose`: clear of every object and inside the walkable square. */
function canMoveForward(world: RemWorld, pose: Pose, bound: number): boolean {
  const next = applyMove(pose, MOVE_FORWARD);
  if (Math.abs(next.x) > bound || Math.abs(next.y) > bound) return false;
  return world.objects.every((o) => (o.x - next.x) ** 2 + (o.y - next.y) ** 2 >= CLEARANCE ** 2);
}

/**
 * Baseline moves: alternating runs of 1-4 forward steps and runs of 1-12 turns in one random direction (up to 180°),
 * cut to `count` moves. A blocked step ends the forward run early and starts a turn.
 */
export function baselineMoves(rng: Rng, world: RemWorld, count: number): Move[] {
  const bound = baselineHalfSide(world.objects.length) + 1;
  const moves: Move[] = [];
  let pose = world.start;
  let forward = rng.bool(0.6);
  while (moves.length < count) {
    if (forward) {
      const run = rng.range(1, 4);
      for (let k = 0; k < run && moves.length < count && canMoveForward(world, pose, bound); k++) {
        moves.push(MOVE_FORWARD);
        pose = applyMove(pose, MOVE_FORWARD);
      }
    } else {
      const turn = rng.bool() ? ROTATE_LEFT : ROTATE_RIGHT;
      const run = rng.range(1, 12);
      for (let k = 0; k < run && moves.length < count; k++) {
        moves.push(turn);
        pose = applyMove(pose, turn);
      }
    }
    forward = !forward;
  }
  return moves;
}
