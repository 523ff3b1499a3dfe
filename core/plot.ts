// Figures as files: a Vega-Lite specification is compiled to Vega, rendered headless in Node by vega's View (no
// browser, no canvas: the SVG renderer measures text itself), and the SVG is rasterised to PNG by sharp. Generic on
// purpose: commands build specs (learning curves, evaluation sweeps) and hand them here.
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';
import sharp from 'sharp';
import { existsSync } from 'node:fs';
import { removeQuietly, writeFileAtomic } from './files.ts';

export type { TopLevelSpec } from 'vega-lite';

export interface RenderedPlot {
  svg: string;
  png: Buffer;
}

export interface RenderOptions {
  /** PNG pixels per SVG unit (2 = sharp on high-density screens and in papers). */
  pngScale?: number;
}

/** Compile and render a Vega-Lite spec to SVG and PNG. */
export async function renderVegaLite(spec: TopLevelSpec, options: RenderOptions = {}): Promise<RenderedPlot> {
  const compiled = vl.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    const density = 72 * (options.pngScale ?? 2);
    const png = await sharp(Buffer.from(svg), { density }).flatten({ background: '#ffffff' }).png().toBuffer();
    return { svg, png };
  } finally {
    view.finalize();
  }
}

/** `runs/plot` or `runs/plot.png` → `runs/plot` (the .svg and .png are written beside each other). */
function plotBasePath(file: string): string {
  return file.replace(/\.(svg|png)$/i, '');
}

/** Render and write FILE.svg and FILE.png atomically; returns the two paths. */
export async function writePlot(
  spec: TopLevelSpec,
  file: string,
  options: RenderOptions = {},
): Promise<{ svg: string; png: string }> {
  const { svg, png } = await renderVegaLite(spec, options);
  const base = plotBasePath(file);
  const hadSvg = existsSync(`${base}.svg`);
  writeFileAtomic(`${base}.svg`, svg);
  try {
    writeFileAtomic(`${base}.png`, png);
  } catch (error) {
    // Both or neither: an SVG this call created is taken back when its PNG cannot be written.
    if (!hadSvg) removeQuietly(`${base}.svg`);
    throw error;
  }
  return { svg: `${base}.svg`, png: `${base}.png` };
}
