// Boxes breakdowns (Kim & Schuster, Figure 2): accuracy by the number of operations that affected the queried box,
// separately for boxes whose content differs from the initial state ("changed") and equals it ("unchanged"), each
// with a Wilson 95% interval and the random baseline's expected accuracy; also by number of operations shown, and how
// often a wrong answer just repeats the initial contents (the failure mode the paper saw in Flan-T5 and GPT-3).
import type { ScoredRow } from '../../core/score.ts';
import { accuracyBy, cell } from '../breakdown.ts';

const baseline = (row: ScoredRow) =>
  typeof row.input.meta?.baselineAccuracy === 'number' ? row.input.meta.baselineAccuracy : null;
const opsAffecting = (row: ScoredRow) =>
  typeof row.input.meta?.opsAffectingBox === 'number' ? row.input.meta.opsAffectingBox : null;

export function summarizeBoxes(rows: ScoredRow[]): Record<string, unknown> {
  const changed = rows.filter((r) => r.input.meta?.changed === true);
  const unchanged = rows.filter((r) => r.input.meta?.changed === false);
  const wrongChanged = changed.filter((r) => r.score.reward < 1);
  return {
    overall: cell(rows, { baseline }),
    changedByOpsAffectingBox: accuracyBy(changed, opsAffecting, { baseline }),
    unchangedByOpsAffectingBox: accuracyBy(unchanged, opsAffecting, { baseline }),
    changed: cell(changed, { baseline }),
    unchanged: cell(unchanged, { baseline }),
    byNumOps: accuracyBy(rows, (r) => (typeof r.input.meta?.numOps === 'number' ? r.input.meta.numOps : null), {
      baseline,
    }),
    wrongChangedRepeatingInitial: wrongChanged.length
      ? wrongChanged.filter((r) => r.score.metrics.repeatsInitial === true).length / wrongChanged.length
      : null,
  };
}
