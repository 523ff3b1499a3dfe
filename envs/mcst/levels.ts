// The five MCST difficulty levels (paper Table 3): entities, objects, actions, negation rate and grid per level.
// Decision: the negation rate is applied as a count, round(rate × actions) negated actions at random positions (at
// least one from level 2 on), rather than a coin per action, so every level-2+ scenario has a matched pair that
// differs from it. Carrying capacity is 2 or 3 per scenario (paper: "2-3 objects").

export interface LevelSpec {
  level: number;
  entities: [number, number];
  objects: [number, number];
  actions: [number, number];
  negationRate: number;
  gridSize: number;
}

export const LEVELS: readonly LevelSpec[] = [
  { level: 1, entities: [2, 2], objects: [3, 3], actions: [3, 5], negationRate: 0, gridSize: 0 },
  { level: 2, entities: [3, 3], objects: [4, 4], actions: [6, 8], negationRate: 0.15, gridSize: 0 },
  { level: 3, entities: [4, 4], objects: [5, 5], actions: [9, 12], negationRate: 0.25, gridSize: 5 },
  { level: 4, entities: [3, 7], objects: [4, 8], actions: [10, 20], negationRate: 0.3, gridSize: 7 },
  { level: 5, entities: [4, 8], objects: [5, 10], actions: [12, 25], negationRate: 0.4, gridSize: 10 },
];

export function levelSpec(level: number): LevelSpec {
  const spec = LEVELS[level - 1];
  if (!spec) throw new RangeError(`mcst: no level ${level}`);
  return spec;
}

/** How many of `actions` actions are negated at this level. */
export function negatedCount(spec: LevelSpec, actions: number): number {
  if (spec.negationRate === 0) return 0;
  return Math.max(1, Math.round(spec.negationRate * actions));
}
