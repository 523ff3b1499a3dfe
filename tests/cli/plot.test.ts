// `metrl plot`: learning curves of training runs as SVG and PNG through the real binary, and its bad-input lines.
import { describe, expect, it } from 'vitest';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { metrl, scratchDir, expectUserError } from './helpers.ts';
import { fakeRun } from './fake-run.ts';

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
    expect(svg).toContain('95% CI; dotted: Game Start');
    // The y-axis names each domain's metric; panels keep the order the runs were given.
    expect(svg).toContain('chess: per-square');
    expect(svg.indexOf("Title text 'shell-text'")).toBeLessThan(svg.indexOf("Title text 'chess-image'"));
    expect(svg.indexOf("Title text 'shell-text'")).toBeGreaterThan(-1);
    const meta = await sharp(readFileSync(`${out}.png`)).metadata();
    expect(meta.format).toBe('png');
    expect(meta.width).toBeGreaterThan(600);
  });

  it('says in one line on stderr that it left out a torn last line, and still plots', async () => {
    const root = scratchDir('plot-torn');
    const run = join(root, 'shell-text');
    fakeRun(run, 'shell', 'text', 0.02);
    appendFileSync(join(run, 'metrics.jsonl'), '{"type":"train","step":21,"rewa');
    const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8').split('\n').length;
    const result = await metrl(['plot', run]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      `plot: ${join(run, 'metrics.jsonl')}:${lines}: left out a torn last line (what a killed or still running training leaves)\n`,
    );
    expect(existsSync(join(run, 'curves.svg'))).toBe(true);
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
