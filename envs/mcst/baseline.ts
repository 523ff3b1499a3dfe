// MCST baselines for `metrl evaluate --model baseline:…`: 'game-start' answers the question from the initial state
// (meta.initialAnswer; by construction always wrong except on verification), 'random' draws an answer of the
// question's kind uniformly: a name among the scenario's entities (and "no one" for possession), the two named in a
// comparison, True/False, a place, a count from 0 to the most objects anyone or anywhere could hold, a direction, or a
// square of the grid. Decision: the paper reports random baselines only in passing, so this is our definition.
import type { Rng } from '../../core/rng.ts';
import type { Episode } from '../../core/episode.ts';

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

export function mcstBaselineAnswer(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string {
  const meta = episode.meta;
  if (baseline === 'game-start') return String(meta.initialAnswer ?? '');
  const entities = strings(meta.entities);
  const places = strings(meta.places);
  const objects = strings(meta.objects);
  switch (meta.questionType) {
    case 'possession':
      return rng.pick([...entities, 'no one']);
    case 'comparison': {
      const m = /, (\S+) or (\S+)\?$/.exec(episode.question ?? '');
      return m ? rng.pick([m[1], m[2]]) : rng.pick(entities);
    }
    case 'verification':
      return rng.pick(['True', 'False']);
    case 'location':
    case 'backward':
      return rng.pick(places);
    case 'count-entity':
      return String(rng.int(4));
    case 'count-location':
      return String(rng.int(objects.length + 1));
    case 'direction':
      return rng.pick(['north', 'east', 'south', 'west']);
    case 'position': {
      const n = Number(meta.gridSize) || 1;
      return `(${rng.range(1, n)}, ${rng.range(1, n)})`;
    }
    default:
      return '';
  }
}
