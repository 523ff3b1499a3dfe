// REM baselines for `metrl evaluate --model baseline:…`. 'random' is the paper's chance answer: uniform over the
// options of comparison (3), left/right (2) and temporal questions (3), and over 0-4 for counting. 'game-start'
// answers from the first frame alone (the starting view, as chess's baseline answers from the starting position):
// counts of what frame 1 shows; for left/right the side in frame 1 when both show there, else a coin; for temporal
// "same time" when both or neither show in frame 1, "before" when only the first does, "after" when only the second.
import type { Rng } from '../../core/rng.ts';
import type { Episode } from '../../core/episode.ts';
import { renderFrame, REFERENCE_SIZE, VISIBLE_PIXELS } from './render.ts';
import { REM_COLORS, REM_SHAPES, typeKey, type RemWorld } from './world.ts';

function matches(value: string, o: { color: string; shape: string }): boolean {
  if ((REM_COLORS as readonly string[]).includes(value)) return o.color === value;
  if ((REM_SHAPES as readonly string[]).includes(value)) return o.shape === value;
  return typeKey(o) === value;
}

export function remBaselineAnswer(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string {
  const category = episode.meta.category;
  const options = (episode.meta.options as string[] | undefined) ?? [];
  if (baseline === 'random') {
    if (category === 'counting') return String(rng.int(5));
    if (category === 'comparison') return rng.pick(options);
    if (category === 'left-right') return rng.pick(['left', 'right']);
    return rng.pick(['before', 'after', 'same time']);
  }
  const world = episode.meta.world as RemWorld;
  const entities = (episode.meta.entities as string[] | undefined) ?? [];
  const coverage = renderFrame(world, world.start, REFERENCE_SIZE, false).coverage;
  const shown = (value: string) =>
    world.objects
      .map((o, i) => (matches(value, o) && coverage[i].pixels >= VISIBLE_PIXELS ? i : -1))
      .filter((i) => i >= 0);
  const [a, b] = entities.map(shown);
  switch (category) {
    case 'counting':
      return String(a.length);
    case 'comparison':
      return a.length > b.length ? options[0] : b.length > a.length ? options[1] : 'equal';
    case 'left-right': {
      if (a.length === 0 || b.length === 0) return rng.pick(['left', 'right']);
      const x = (ids: number[]) => coverage[ids[0]].sumX / coverage[ids[0]].pixels;
      return x(a) < x(b) ? 'left' : 'right';
    }
    default:
      return a.length > 0 === b.length > 0 ? 'same time' : a.length > 0 ? 'before' : 'after';
  }
}
