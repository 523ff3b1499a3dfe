// MATE baselines for `metrl evaluate --model baseline:…`. 'random' answers like the paper's random baseline: a
// random option for visual targets (1/8 colours, 1/4 shapes) and the value of a random object of the scene for
// textual ones. 'game-start' (no linking at all) answers with the scene's most common value of the asked attribute,
// the first object's on ties: what copying from the scene without finding the pointed object gives.
import type { Rng } from '../../core/rng.ts';
import type { Episode } from '../../core/episode.ts';
import { answerOptions } from './questions.ts';
import { attributeText, type MateAttribute, type MateObject } from './scene.ts';

export function mateBaselineAnswer(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string {
  const attribute = episode.meta.targetAttribute as MateAttribute;
  const objects = (episode.meta.scene as MateObject[] | undefined) ?? [];
  const options = answerOptions(attribute);
  if (baseline === 'random') {
    if (options) return rng.pick(options);
    return objects.length > 0 ? attributeText(rng.pick(objects), attribute) : '';
  }
  const counts = new Map<string, number>();
  for (const o of objects) counts.set(attributeText(o, attribute), (counts.get(attributeText(o, attribute)) ?? 0) + 1);
  let best = '';
  let bestCount = 0;
  for (const [value, count] of counts) {
    if (count > bestCount) {
      best = value;
      bestCount = count;
    }
  }
  return best;
}
