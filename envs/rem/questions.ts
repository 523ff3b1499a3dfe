// REM questions and their ground truth, computed from what the frames actually showed (per-frame coverage from the
// renderer's id buffer), never from the scene list:
//   counting    "How many blue objects / cones / red spheres did you see?" → distinct instances visible in any frame.
//   comparison  "Did you see more red cones or blue spheres, or an equal number?" → the entity with more seen
//               instances, or "equal"; the two entities are of one kind (colours, shapes or colour-shapes).
//   left-right  "Is the green sphere to the left or right of the blue cuboid?" → asked only for two colour-shapes
//               each seen as exactly one instance, seen together at least once, and on the same side of each other
//               (horizontal centroids at least 2 px apart at the reference size) in every frame showing both.
//   temporal    "Did we see the purple cone before, after, or at the same time as the orange cuboid?" → by the first
//               frame showing any instance of each colour-shape.
import type { Rng } from '../../core/rng.ts';
import { VISIBLE_PIXELS, type Coverage } from './render.ts';
import { REM_COLORS, REM_SHAPES, typeKey, type RemWorld } from './world.ts';

export const REM_CATEGORIES = ['counting', 'comparison', 'left-right', 'temporal'] as const;
export type RemCategory = (typeof REM_CATEGORIES)[number];

export interface RemQuestion {
  category: RemCategory;
  question: string;
  target: string;
  /** Accepted answers for comparison questions (the two entities and "equal"). */
  options?: string[];
  /** Seen instances of the asked entity (counting) or of the two entities (comparison). */
  counts?: number[];
  entities: string[];
}

/** Which entity a counting or comparison question is about: a colour, a shape or both. */
type Kind = 'color' | 'shape' | 'color-shape';

const PLURAL: Record<string, string> = { cuboid: 'cuboids', sphere: 'spheres', cone: 'cones' };

function entityPhrase(kind: Kind, value: string): string {
  if (kind === 'color') return `${value} objects`;
  const words = value.split(' ');
  const shape = words[words.length - 1];
  return [...words.slice(0, -1), PLURAL[shape]].join(' ');
}

function matches(kind: Kind, value: string, o: { color: string; shape: string }): boolean {
  if (kind === 'color') return o.color === value;
  if (kind === 'shape') return o.shape === value;
  return typeKey(o) === value;
}

/** What the trajectory showed: which objects were seen, when first, and where (horizontal centroid) per frame. */
export interface Sightings {
  seen: boolean[];
  /** frames[f][i]: object i is visible in frame f. */
  visible: boolean[][];
  /** centroid[f][i]: mean pixel x of object i in frame f (reference size), when visible. */
  centroid: number[][];
}

export function sightings(world: RemWorld, coverage: Coverage[][]): Sightings {
  const visible = coverage.map((frame) => frame.map((c) => c.pixels >= VISIBLE_PIXELS));
  const centroid = coverage.map((frame) => frame.map((c) => (c.pixels > 0 ? c.sumX / c.pixels : NaN)));
  const seen = world.objects.map((_, i) => visible.some((v) => v[i]));
  return { seen, visible, centroid };
}

function seenCount(world: RemWorld, s: Sightings, kind: Kind, value: string): number {
  return world.objects.filter((o, i) => s.seen[i] && matches(kind, value, o)).length;
}

/** Candidate entity values of a kind: those present in the world (seen or not, so a count may be 0). */
function presentValues(world: RemWorld, kind: Kind): string[] {
  const values = world.objects.map((o) => (kind === 'color' ? o.color : kind === 'shape' ? o.shape : typeKey(o)));
  const order = kind === 'color' ? [...REM_COLORS] : kind === 'shape' ? [...REM_SHAPES] : [...new Set(values)].sort();
  return order.filter((v) => values.includes(v));
}

export function countingQuestion(
  rng: Rng,
  world: RemWorld,
  s: Sightings,
  kind?: Kind,
  value?: string,
): RemQuestion | null {
  const k = kind ?? rng.pick<Kind>(['color', 'shape', 'color-shape']);
  const values = presentValues(world, k);
  if (values.length === 0) return null;
  const v = value ?? rng.pick(values);
  const count = seenCount(world, s, k, v);
  return {
    category: 'counting',
    question: `How many ${entityPhrase(k, v)} did you see?`,
    target: String(count),
    counts: [count],
    entities: [v],
  };
}

function comparisonQuestion(rng: Rng, world: RemWorld, s: Sightings): RemQuestion | null {
  const kind = rng.pick<Kind>(['color', 'shape', 'color-shape']);
  const values = presentValues(world, kind);
  if (values.length < 2) return null;
  const [a, b] = rng.sample(values, 2);
  const ca = seenCount(world, s, kind, a);
  const cb = seenCount(world, s, kind, b);
  if (ca === 0 && cb === 0) return null;
  const pa = entityPhrase(kind, a);
  const pb = entityPhrase(kind, b);
  return {
    category: 'comparison',
    question: `Did you see more ${pa} or ${pb}, or an equal number?`,
    target: ca > cb ? pa : cb > ca ? pb : 'equal',
    options: [pa, pb, 'equal'],
    counts: [ca, cb],
    entities: [a, b],
  };
}

/** Colour-shapes seen as exactly one instance, with that instance's index. */
function singletons(world: RemWorld, s: Sightings): Map<string, number> {
  const byType = new Map<string, number[]>();
  world.objects.forEach((o, i) => {
    if (s.seen[i]) byType.set(typeKey(o), [...(byType.get(typeKey(o)) ?? []), i]);
  });
  return new Map([...byType.entries()].filter(([, ids]) => ids.length === 1).map(([k, ids]) => [k, ids[0]]));
}

/** Minimum horizontal distance (reference pixels) between centroids for a left/right relation to count. */
const SIDE_MARGIN = 2;

function leftRightQuestion(rng: Rng, world: RemWorld, s: Sightings): RemQuestion | null {
  const single = [...singletons(world, s).entries()];
  const pairs: { a: string; b: string; side: 'left' | 'right' }[] = [];
  for (let x = 0; x < single.length; x++) {
    for (let y = 0; y < single.length; y++) {
      if (x === y) continue;
      const [ta, ia] = single[x];
      const [tb, ib] = single[y];
      let side: 'left' | 'right' | null = null;
      let together = 0;
      let consistent = true;
      s.visible.forEach((v, f) => {
        if (!v[ia] || !v[ib]) return;
        together++;
        const dx = s.centroid[f][ia] - s.centroid[f][ib];
        const here = dx <= -SIDE_MARGIN ? 'left' : dx >= SIDE_MARGIN ? 'right' : null;
        if (here === null || (side !== null && here !== side)) consistent = false;
        side = here;
      });
      if (together > 0 && consistent && side) pairs.push({ a: ta, b: tb, side });
    }
  }
  if (pairs.length === 0) return null;
  const p = rng.pick(pairs);
  return {
    category: 'left-right',
    question: `Is the ${p.a} to the left or right of the ${p.b}?`,
    target: p.side,
    entities: [p.a, p.b],
  };
}

function temporalQuestion(rng: Rng, world: RemWorld, s: Sightings): RemQuestion | null {
  const first = new Map<string, number>();
  s.visible.forEach((v, f) => {
    world.objects.forEach((o, i) => {
      if (v[i] && !first.has(typeKey(o))) first.set(typeKey(o), f);
    });
  });
  const types = [...first.keys()].sort();
  if (types.length < 2) return null;
  // Draw the answer first, uniformly among those some pair has, so "same time" does not swamp the category.
  const byAnswer = new Map<string, [string, string][]>();
  for (const a of types) {
    for (const b of types) {
      if (a === b) continue;
      const answer = first.get(a)! < first.get(b)! ? 'before' : first.get(a)! > first.get(b)! ? 'after' : 'same time';
      byAnswer.set(answer, [...(byAnswer.get(answer) ?? []), [a, b]]);
    }
  }
  const answer = rng.pick([...byAnswer.keys()].sort());
  const [a, b] = rng.pick(byAnswer.get(answer)!);
  return {
    category: 'temporal',
    question: `Did we see the ${a} before, after, or at the same time as the ${b}?`,
    target: answer,
    entities: [a, b],
  };
}

export function askCategory(rng: Rng, category: RemCategory, world: RemWorld, s: Sightings): RemQuestion | null {
  switch (category) {
    case 'counting':
      return countingQuestion(rng, world, s);
    case 'comparison':
      return comparisonQuestion(rng, world, s);
    case 'left-right':
      return leftRightQuestion(rng, world, s);
    case 'temporal':
      return temporalQuestion(rng, world, s);
  }
}

/**
 * Full Rotation questions: counts of the duplicated targets (ground truth 2 when both copies were seen), of one
 * type seen once, and of a type absent from the scene (0) when one exists.
 */
export function fullRotationQuestions(rng: Rng, world: RemWorld, s: Sightings): RemQuestion[] {
  const byType = new Map<string, number>();
  for (const o of world.objects) byType.set(typeKey(o), (byType.get(typeKey(o)) ?? 0) + 1);
  const duplicated = [...byType.entries()].filter(([, n]) => n > 1).map(([t]) => t);
  const singles = [...byType.entries()].filter(([, n]) => n === 1).map(([t]) => t);
  const absent = REM_COLORS.flatMap((c) => REM_SHAPES.map((sh) => `${c} ${sh}`)).filter((t) => !byType.has(t));
  const asked = [...duplicated, ...rng.sample(singles, 1), ...rng.sample(absent, 1)];
  return asked.map((t) => countingQuestion(rng, world, s, 'color-shape', t)!).filter((q) => q !== null);
}
