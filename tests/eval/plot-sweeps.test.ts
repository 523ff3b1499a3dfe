// Sweep plots join only points that are one sweep: a text-only and an image-only setting are two points on the
// image-ratio axis, never a line over "fraction of image actions"; mixed settings over several ratios, and lengths
// of one run, are lines.
import { describe, expect, it } from 'vitest';
import { sweepPoints } from '../../eval/plot-sweeps.ts';
import type { RunReport } from '../../eval/report.ts';

function report(settings: Array<{ modality: string; imageRatio?: number; actions?: number }>): RunReport {
  return {
    model: 'm',
    baseline: false,
    settings: settings.map((s) => ({
      setting: {
        domain: 'shell',
        modality: s.modality,
        imageRatio: s.imageRatio ?? 0,
        actions: s.actions ?? 5,
        prompt: 'zero-shot',
        shots: 0,
        task: 'track',
        cascade: false,
      },
      summary: { accuracy: 0.5, ci95: { low: 0.4, high: 0.6 }, count: 10, invalid: 0 },
    })),
  } as unknown as RunReport;
}

describe('sweep points', () => {
  it('text-only and image-only settings are separate points', () => {
    const points = sweepPoints([report([{ modality: 'text' }, { modality: 'image' }])], 'imageRatio');
    expect(points.map((p) => p.x)).toEqual([0, 1]);
    expect(new Set(points.map((p) => p.line)).size).toBe(2);
  });

  it('mixed settings over ratios form one line, apart from a text-only point of the same run', () => {
    const points = sweepPoints(
      [
        report([
          { modality: 'mixed', imageRatio: 0.25 },
          { modality: 'mixed', imageRatio: 0.75 },
          { modality: 'text' },
        ]),
      ],
      'imageRatio',
    );
    const lines = new Map<string, number[]>();
    for (const p of points) lines.set(p.line, [...(lines.get(p.line) ?? []), p.x]);
    expect([...lines.values()].sort((a, b) => a.length - b.length)).toEqual([[0], [0.25, 0.75]]);
  });

  it('a length sweep is one line per run, even for two runs of the same model', () => {
    const points = sweepPoints(
      [
        report([
          { modality: 'text', actions: 2 },
          { modality: 'text', actions: 5 },
        ]),
        report([
          { modality: 'text', actions: 2 },
          { modality: 'text', actions: 5 },
        ]),
      ],
      'actions',
    );
    expect(new Set(points.map((p) => p.line)).size).toBe(2);
  });
});
