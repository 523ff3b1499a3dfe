// The learning-curve spec (trainer/logs/curves.ts), compiled by Vega-Lite and rendered to SVG: whole-step ticks on one step
// axis shared by the accuracy and reward panels, panels in the order given, the raw and smoothed reward named with the
// smoothing window (none for short runs), a legend keyed by line style (trained solid, transfer dashed) and colour,
// and the metric named on the y-axis.
import { describe, expect, it } from 'vitest';
import { learningCurveSpec, smoothingHalfWidth, type RunCurves } from '../../../trainer/logs/curves.ts';
import { renderVegaLite } from '../../../core/plot.ts';
import type { MetricsRow } from '../../../trainer/logs/metrics.ts';

function run(label: string, domain: string, steps: number): RunCurves {
  const rows: MetricsRow[] = [
    { type: 'baseline', step: 0, name: 'game-start', n: 20, accuracy: 0.3, low: 0.2, high: 0.4 },
  ];
  for (let step = 0; step <= steps; step++) {
    if (step > 0)
      rows.push({
        type: 'train',
        step,
        rewardMean: 0.5,
        rewardStd: 0.1,
        accuracy: 0.5,
        exactRate: 0.5,
        validRate: 1,
        invalidFraction: 0,
        kl: 0,
        clipFraction: 0,
        ratioMean: 1,
        entropy: 0,
        completionLength: 3,
        loss: 0,
        gradNorm: 0,
        zeroSpreadGroups: 0,
        groups: 2,
        updated: true,
        rolloutTokensPerSecond: 1,
        learnerTokensPerSecond: 1,
        time: { rollout: 1, reward: 0, logprobs: 0, update: 1, total: 2 },
      } as MetricsRow);
    if (step === 0 || step === steps) {
      rows.push({
        type: 'eval',
        step,
        modality: 'text',
        role: 'train',
        n: 20,
        accuracy: 0.5,
        low: 0.4,
        high: 0.6,
        exactRate: 0.5,
        validRate: 1,
        seconds: 1,
      } as MetricsRow);
      rows.push({
        type: 'eval',
        step,
        modality: 'image',
        role: 'transfer',
        n: 20,
        accuracy: 0.4,
        low: 0.3,
        high: 0.5,
        exactRate: 0.4,
        validRate: 1,
        seconds: 1,
      } as MetricsRow);
    }
  }
  return { label, domain, rows };
}

describe('learning curves', () => {
  it('a 3-step run: integer ticks only, no smoothing claimed, legend by style and colour, metric named', async () => {
    const { svg } = await renderVegaLite(
      learningCurveSpec([run('zeta-run', 'chess', 3), run('alpha-run', 'shell', 3)]),
    );
    const ticks = [
      ...svg.matchAll(/aria-label="X-axis titled 'step' for a linear scale with values from ([\d.]+) to ([\d.]+)"/g),
    ].map((m) => [m[1], m[2]]);
    expect(ticks.length).toBeGreaterThan(0);
    for (const t of ticks) expect(t).toEqual(['0', '3']);
    expect(svg).not.toMatch(/>(1\.5|2\.5)</); // half steps would sit between the whole ones
    expect(svg).not.toContain('moving mean');
    expect(svg).toContain('per step');
    expect(svg).toContain('text (trained)');
    expect(svg).toContain('image (transfer)');
    expect(svg).toContain('chess: per-square');
    expect(svg.indexOf("Title text 'zeta-run'")).toBeLessThan(svg.indexOf("Title text 'alpha-run'"));
  });

  it('a 40-step run: the smoothed reward names its window', async () => {
    expect(smoothingHalfWidth(40)).toBe(2);
    const { svg } = await renderVegaLite(learningCurveSpec([run('long', 'shell', 40)]));
    expect(svg).toContain('moving mean of 5 steps');
  });
});
