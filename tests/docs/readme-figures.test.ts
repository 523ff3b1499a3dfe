// Every figure the README quotes appears on the page it links to: a measured number in the README is a pointer to a
// run described in docs/, and when the run is measured again the README cannot keep the old number unseen. A
// figure is a decimal with its interval if it has one (0.894 [0.881, 0.908]: the interval ties the point to its
// run, where a bare 0.894 could match any other run's bound), a decimal (6.72 s), a number with thousands separators
// (4,670), a whole number with its unit (38 s, 2×, 11 GiB) or a date; versions (Node 20.19, 1.29.0), command lines in
// backticks and code blocks are not figures. Each paragraph or list item that quotes one must link a docs page, and
// each of its figures must be written, as the README writes it, in the linked section (or page, for a link without
// an anchor), as a whole number there, not as the start or end of a longer one.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { links, proseLines, section } from '../helpers/markdown.ts';

const root = resolve(import.meta.dirname, '..', '..');

/** Words after which a number is a version, not a measurement. */
const VERSION_WORDS =
  /(?:node|npm|runtime|onnxruntime-node|mesa|cuda|trl|peft|transformers|python|v|version|release)\s*$/i;

const FIGURE =
  /\b20\d\d-\d\d-\d\d\b|\d+\.\d+ \[\d+\.\d+, \d+\.\d+\]|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+(?:\.\d+)*|\b\d+\s?(?:s|ms|GiB|GB|MB|KiB|×|%|min|minutes|hours)(?![\w])/g;

/** The figures of one prose text (inline code removed), in order. */
export function figuresOf(text: string): string[] {
  const prose = text
    .replace(/(`+)[^`]*?\1/g, ' ')
    .replace(/\]\([^)]*\)/g, ']')
    .replace(/\*\*|__/g, '')
    .replace(/\s+/g, ' ');
  const out: string[] = [];
  for (const m of prose.matchAll(FIGURE)) {
    const figure = m[0];
    if (/^\d+\.\d+\.\d+/.test(figure)) continue; // a version: 1.29.0
    if (VERSION_WORDS.test(prose.slice(0, m.index))) continue;
    out.push(figure);
  }
  return out;
}

/** Whether a page writes `figure` as a whole number: emphasis and line breaks aside, no digit glued on either side. */
export function occurs(page: string, figure: string): boolean {
  const text = page.replace(/\*\*|__/g, '').replace(/\s+/g, ' ');
  const escaped = figure.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\d.,])${escaped}(?![\\d\\p{L}]|[.,]\\d)`, 'u').test(text);
}

/** The README's paragraphs and list items, each with the line it starts on. */
function blocks(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let current: { line: number; text: string } | null = null;
  let last = 0;
  for (const { line, text: raw } of proseLines(text)) {
    const starts = raw.trim() === '' || /^\s*(?:[-*]|\d+\.)\s/.test(raw) || /^\s{0,3}#/.test(raw) || line !== last + 1;
    if (starts && current) {
      out.push(current);
      current = null;
    }
    if (raw.trim() !== '' && !/^\s{0,3}#/.test(raw)) {
      if (current) current.text += `\n${raw}`;
      else current = { line, text: raw };
    }
    last = line;
  }
  if (current) out.push(current);
  return out;
}

/** What is wrong with a markdown file's figures: one line per figure without a page, or missing from its page. */
export function unsourcedFigures(file: string): string[] {
  const problems: string[] = [];
  for (const block of blocks(readFileSync(file, 'utf8'))) {
    const figures = figuresOf(block.text);
    if (figures.length === 0) continue;
    const pages = links(block.text)
      .map(({ target }) => target)
      .filter((t) => /\.md(?:#|$)/.test(t))
      .map((t) => {
        const [path, anchor] = t.split('#') as [string, string | undefined];
        const page = readFileSync(resolve(dirname(file), decodeURI(path)), 'utf8');
        return { target: t, text: anchor ? (section(page, decodeURIComponent(anchor)) ?? '') : page };
      });
    const where = `README.md:${block.line}`;
    if (pages.length === 0) {
      problems.push(`${where}: ${figures.join(', ')} quoted without a link to the page that has the run`);
      continue;
    }
    for (const figure of figures) {
      if (!pages.some((p) => occurs(p.text, figure)))
        problems.push(`${where}: ${figure} is not on ${pages.map((p) => p.target).join(' or ')}`);
    }
  }
  return problems;
}

describe('the README quotes its pages', () => {
  it('tells figures from versions, commands and links', () => {
    expect(
      figuresOf(
        'chess 6.72 s against 11.45 s, 4,670 tokens/s, 2× faster, 11 GiB (2026-11-26); Node 20.19, ORT 1.29.0, `--steps 3` [x](a.md#b-2)',
      ),
    ).toEqual(['6.72', '11.45', '4,670', '2×', '11 GiB', '2026-11-26']);
    expect(figuresOf('0.786 → **0.894** [0.881,\n  0.908] at step 40')).toEqual(['0.786', '0.894 [0.881, 0.908]']);
  });

  it('finds a figure only as a whole number, across emphasis and line breaks', () => {
    const page = 'image **0.894 [0.881,\n  0.908]**, text 0.827; 11.45 s, 4,670 tokens';
    expect(occurs(page, '0.894 [0.881, 0.908]')).toBe(true);
    expect(occurs(page, '0.827')).toBe(true);
    expect(occurs(page, '0.82')).toBe(false);
    expect(occurs(page, '1.45')).toBe(false);
    expect(occurs(page, '670')).toBe(false);
    expect(occurs('took 10 minutes', '10 min')).toBe(false);
    expect(occurs('took 10 min, then', '10 min')).toBe(true);
    expect(occurs(page, '0.895 [0.881, 0.908]')).toBe(false);
  });

  it('every figure of README.md is on the page its paragraph links to', () => {
    expect(unsourcedFigures(resolve(root, 'README.md'))).toEqual([]);
  });
});
