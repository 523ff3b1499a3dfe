// Shell game breakdowns for summaries: how often each shell was predicted (a model that always answers the start
// shell or one favourite number shows up here) and accuracy by how many swaps actually moved the ball, when the rows
// carry that in meta.ballMoves (generated rows do).
import type { ScoredRow } from '../../core/score.ts';

export function summarizeShell(rows: ScoredRow[]): Record<string, unknown> {
  const predictions: Record<string, number> = { '1': 0, '2': 0, '3': 0, invalid: 0 };
  const byBallMoves = new Map<number, { count: number; correct: number }>();
  for (const row of rows) {
    predictions[row.score.prediction ?? 'invalid'] = (predictions[row.score.prediction ?? 'invalid'] ?? 0) + 1;
    const moves = row.input.meta?.ballMoves;
    if (typeof moves === 'number' && Number.isInteger(moves)) {
      const entry = byBallMoves.get(moves) ?? { count: 0, correct: 0 };
      entry.count++;
      entry.correct += row.score.reward;
      byBallMoves.set(moves, entry);
    }
  }
  const breakdown: Record<string, unknown> = { predictions };
  if (byBallMoves.size > 0) {
    breakdown.accuracyByBallMoves = Object.fromEntries(
      [...byBallMoves.entries()]
        .sort(([a], [b]) => a - b)
        .map(([k, e]) => [String(k), { count: e.count, accuracy: e.correct / e.count }]),
    );
  }
  return breakdown;
}
