// Every relative link and image in README.md, docs/*.md and checkpoints/README.md points at a file that exists and, with a #anchor, at a
// heading of that file (GitHub's slugs). Moving a section breaks links silently; this test names each broken one.
// External links (http, https, mailto) are not checked: the test runs offline.
import { describe, expect, it } from 'vitest';
import { anchors, links, slug } from '../helpers/markdown.ts';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');

/** The broken links of one markdown file, each as "file:line: target (why)". */
export function brokenLinks(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const broken: string[] = [];
  for (const { line, target } of links(text)) {
    const hash = target.indexOf('#');
    const path = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
    const where = `${relative(root, file)}:${line}: ${target}`;
    const dest = path === '' ? file : resolve(dirname(file), path);
    if (!existsSync(dest)) {
      broken.push(`${where} (no such file: ${relative(root, dest)})`);
      continue;
    }
    if (anchor === null) continue;
    if (!dest.endsWith('.md') || statSync(dest).isDirectory()) {
      broken.push(`${where} (an anchor into a file that is not markdown)`);
      continue;
    }
    if (!anchors(readFileSync(dest, 'utf8')).has(anchor)) {
      broken.push(`${where} (no heading #${anchor} in ${relative(root, dest)})`);
    }
  }
  return broken;
}

const docsDir = join(root, 'docs');
const pages = [
  join(root, 'README.md'),
  join(root, 'checkpoints', 'README.md'),
  ...readdirSync(docsDir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(docsDir, f)),
];

describe('documentation links', () => {
  it('slugs headings as GitHub does', () => {
    expect(slug('The ONNX Runtime engine: `--engine ort`')).toBe('the-onnx-runtime-engine---engine-ort');
    expect(slug('Against PyTorch eager (the peer)')).toBe('against-pytorch-eager-the-peer');
    expect(slug('The GRPO family: TRL’s options under TRL’s names')).toBe(
      'the-grpo-family-trls-options-under-trls-names',
    );
    expect(slug('model_type and [links](x.md)')).toBe('model_type-and-links');
    expect([...anchors('# A\n## A\n```\n# A\n```\n### A\n')]).toEqual(['a', 'a-1', 'a-2']);
  });

  it('finds links and images, skipping code and external links', () => {
    const text = 'see [x](a.md#b), ![y](fig.png) and [z](#c)\n`[no](n.md)` [w](https://e.org)\n```\n[no](n.md)\n```\n';
    expect(links(text).map((l) => l.target)).toEqual(['a.md#b', 'fig.png', '#c']);
  });

  it('reports a missing file and a missing anchor, naming the file and the link', () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-links-'));
    try {
      writeFileSync(join(dir, 'b.md'), '# Title\n## Same\n## Same\n');
      writeFileSync(
        join(dir, 'a.md'),
        '# A\n[ok](b.md#same-1) [ok](#a) [ok](b.md)\n[gone](missing.md) [bad](b.md#same-2)\n![img](fig.png)\n',
      );
      const broken = brokenLinks(join(dir, 'a.md')).map((b) => b.replace(/^.*a\.md:/, 'a.md:'));
      expect(broken).toEqual([
        'a.md:3: missing.md (no such file: ' + relative(root, join(dir, 'missing.md')) + ')',
        'a.md:3: b.md#same-2 (no heading #same-2 in ' + relative(root, join(dir, 'b.md')) + ')',
        'a.md:4: fig.png (no such file: ' + relative(root, join(dir, 'fig.png')) + ')',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(pages.map((p) => [relative(root, p), p]))('%s: every relative link resolves', (_name, page) => {
    expect(brokenLinks(page)).toEqual([]);
  });
});
