// `metrl plot`: learning curves of training runs as SVG and PNG through the real binary, and its bad-input lines.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { metrl, scratchDir, expectUserError } from './helpers.ts';
import type { BaselineRow, EvalRow, TrainRow } from '../../trainer/metrics.ts';

function fakeRun(dir: string, domain: string, modality: 'text' | 'image', slope: number): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ domain, modality }));
  const rows: (TrainRow | EvalRow | BaselineRow)[] = [{ type: 'baseline', step: 0, name: 'game-start', n: 200, accuracy: 0.3, low: 0.25, high: 0.35 }];
  const transfer = modality === 'text' ? 'image' : 'text';
  for (let step = 0; step <= 20; step++) {
    if (step > 0) {
      const r = Math.min(1, 0.4 + slope * step);
      rows.push({ type: 'train', step, rewardMean: r, rewardStd: 0.3, accuracy: r, exactRate: r, validRate: 1, invalidFraction: 0, kl: 0.01, clipFraction: 0, ratioMean: 1, entropy: 0.5, completionLength: 2, loss: 0.1, gradNorm: 0.5, zeroSpreadGroups: 1, groups: 8, updated: true, rolloutTokensPerSecond: 100, learnerTokensPerSecond: 1000, time: { rollout: 1, reward: 0, logprobs: 0.5, update: 1, total: 2.5 } });
    }
    if (step % 5 === 0) {
      const a = Math.min(1, 0.4 + slope * step);
      for (const [m, role, acc] of [[modality, 'train', a], [transfer, 'transfer', 0.34]] as const) {
        rows.push({ type: 'eval', step, modality: m, role, n: 200, accuracy: acc, low: acc - 0.06, high: acc + 0.06, exactRate: acc, validRate: 1, seconds: 3 });
      }
    }
  }
  writeFileSync(join(dir, 'metrics.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

describe('metrl plot', () => {
  it('draws several runs side by side as SVG and PNG', async () => {
    const root = scratchDir('plot');
    fakeRun(join(root, 'shell-text'), 'shell', 'text', 0.02);
    fakeRun(join(root, 'chess-image'), 'chess', 'image', 0.01);
    const out = join(root, 'fig', 'curves');
    const result = await metrl(['plot', join(root, 'shell-text'), join(root, 'chess-image'), '--out', out]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const svg = readFileSync(`${out}.svg`, 'utf8');
    expect(svg).toContain('<svg');
    expect(svg).toContain('test accuracy (95% CI); dotted: Game Start');
    expect(svg).toContain('shell-text');
    expect(svg).toContain('chess-image');
    const meta = await sharp(readFileSync(`${out}.png`)).metadata();
    expect(meta.format).toBe('png');
    expect(meta.width).toBeGreaterThan(600);
  });

  it('names a folder that is not a run, with exit status 2', async () => {
    const root = scratchDir('plot-bad');
    expectUserError(await metrl(['plot', join(root, 'missing')]), /missing: no such run folder/);
    mkdirSync(join(root, 'empty'));
    expectUserError(await metrl(['plot', join(root, 'empty')]), /not a run folder/);
    writeFileSync(join(root, 'empty', 'metrics.jsonl'), '{"type":"eval","step":"x"}\n');
    expectUserError(await metrl(['plot', join(root, 'empty')]), /metrics.jsonl:1: not a metrics row/);
    expect(existsSync(join(root, 'empty', 'curves.svg'))).toBe(false);
  });
});
