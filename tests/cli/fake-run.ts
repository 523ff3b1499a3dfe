// A training run folder as `metrl train` leaves it (config.json, metrics.jsonl with baseline, train and eval rows),
// written directly so that plot and file-error tests need no training.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BaselineRow, EvalRow, TrainRow } from '../../trainer/logs/metrics.ts';

export function fakeRun(dir: string, domain: string, modality: 'text' | 'image', slope: number): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ domain, modality }));
  const rows: (TrainRow | EvalRow | BaselineRow)[] = [
    { type: 'baseline', step: 0, name: 'game-start', n: 200, accuracy: 0.3, low: 0.25, high: 0.35 },
  ];
  const transfer = modality === 'text' ? 'image' : 'text';
  for (let step = 0; step <= 20; step++) {
    if (step > 0) {
      const r = Math.min(1, 0.4 + slope * step);
      rows.push({
        type: 'train',
        step,
        rewardMean: r,
        rewardStd: 0.3,
        accuracy: r,
        exactRate: r,
        validRate: 1,
        invalidFraction: 0,
        kl: 0.01,
        clipFraction: 0,
        ratioMean: 1,
        entropy: 0.5,
        completionLength: 2,
        loss: 0.1,
        gradNorm: 0.5,
        zeroSpreadGroups: 1,
        groups: 8,
        updated: true,
        rolloutTokensPerSecond: 100,
        learnerTokensPerSecond: 1000,
        time: { rollout: 1, reward: 0, logprobs: 0.5, update: 1, total: 2.5 },
      });
    }
    if (step % 5 === 0) {
      const a = Math.min(1, 0.4 + slope * step);
      for (const [m, role, acc] of [
        [modality, 'train', a],
        [transfer, 'transfer', 0.34],
      ] as const) {
        rows.push({
          type: 'eval',
          step,
          modality: m,
          role,
          n: 200,
          accuracy: acc,
          low: acc - 0.06,
          high: acc + 0.06,
          exactRate: acc,
          validRate: 1,
          seconds: 3,
        });
      }
    }
  }
  writeFileSync(join(dir, 'metrics.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}
