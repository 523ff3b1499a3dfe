// MATE breakdowns for summaries (Env.summarize): accuracy and the paper's out-of-scene error rate (a wrong answer that
// matches no object's value of the asked attribute, rewards/mate.ts's `outOfScene` metric), overall and by task,
// target attribute, pointer→target pair, object count and number of linking attributes.
import type { ScoredRow } from '../../core/score.ts';
import { targetAttributeOf } from '../../rewards/mate.ts';

interface Tally {
  count: number;
  correct: number;
  errors: number;
  outOfScene: number;
}

function tally(map: Map<string, Tally>, key: string, row: ScoredRow): void {
  const t = map.get(key) ?? { count: 0, correct: 0, errors: 0, outOfScene: 0 };
  t.count++;
  t.correct += row.score.reward;
  if (row.score.reward < 1) {
    t.errors++;
    if (row.score.metrics.outOfScene === true) t.outOfScene++;
  }
  map.set(key, t);
}

function table(map: Map<string, Tally>): Record<string, unknown> {
  const keys = [...map.keys()].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  return Object.fromEntries(
    keys.map((k) => {
      const t = map.get(k)!;
      return [
        k,
        {
          count: t.count,
          accuracy: t.correct / t.count,
          outOfSceneErrorRate: t.errors > 0 ? t.outOfScene / t.errors : null,
        },
      ];
    }),
  );
}

/**
 * Accuracy and out-of-scene error rate (out-of-scene errors / all errors, the paper's OSE) overall and by task, target
 * attribute, pointer→target pair, object count and number of linking attributes.
 */
export function summarizeMate(rows: ScoredRow[]): Record<string, unknown> {
  const all = new Map<string, Tally>();
  const groups: Record<string, Map<string, Tally>> = {
    byTask: new Map(),
    byTargetAttribute: new Map(),
    byPair: new Map(),
    byObjectCount: new Map(),
    byLinkingAttributes: new Map(),
  };
  for (const row of rows) {
    const meta = row.input.meta ?? {};
    tally(all, 'all', row);
    tally(groups.byTargetAttribute, targetAttributeOf(row.input.target, meta), row);
    if (typeof meta.task === 'string') tally(groups.byTask, meta.task, row);
    if (typeof meta.pointerAttribute === 'string')
      tally(groups.byPair, `${meta.pointerAttribute}->${meta.targetAttribute}`, row);
    if (typeof meta.objectCount === 'number') tally(groups.byObjectCount, String(meta.objectCount), row);
    if (Array.isArray(meta.linkingAttributes)) {
      const l = meta.linkingAttributes as string[];
      tally(groups.byLinkingAttributes, l[0] === 'coords' ? 'coords only' : String(l.length), row);
    }
  }
  const overall = all.get('all');
  return {
    outOfSceneErrorRate: overall && overall.errors > 0 ? overall.outOfScene / overall.errors : null,
    ...Object.fromEntries(
      Object.entries(groups)
        .filter(([, m]) => m.size > 0)
        .map(([k, m]) => [k, table(m)]),
    ),
  };
}
