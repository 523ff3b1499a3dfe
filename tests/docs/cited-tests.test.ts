// Every test file a comment or a docs page cites as its evidence (a path under tests/ ending .test.ts) exists: a renamed
// or removed test otherwise leaves a claim that points nowhere, which no link check sees (the citations are prose,
// not links).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..', '..');
/** The folders whose files may cite tests, and the markdown beside them. */
const SOURCES = ['bench', 'core', 'envs', 'eval', 'models', 'rewards', 'scripts', 'tests', 'trainer', 'docs'];
const CITATION = /\btests\/[\w./-]+\.test\.ts\b/g;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'fixtures' ? [] : files(path);
    return /\.(ts|mts|mjs|sh|md)$/.test(name) ? [path] : [];
  });
}

/** "file:line: citation" for each cited test file that does not exist. */
export function missingCitations(paths: string[]): string[] {
  const missing: string[] = [];
  for (const file of paths) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, i) => {
        for (const [cited] of text.matchAll(CITATION))
          if (!existsSync(join(root, cited))) missing.push(`${relative(root, file)}:${i + 1}: ${cited}`);
      });
  }
  return missing;
}

describe('cited test files', () => {
  it('every tests/…test.ts named in the source, the tests and the docs exists', () => {
    const self = join(root, 'tests', 'docs', 'cited-tests.test.ts');
    const paths = [join(root, 'README.md'), ...SOURCES.flatMap((d) => files(join(root, d)))].filter((p) => p !== self);
    expect(paths.length).toBeGreaterThan(300);
    expect(missingCitations(paths)).toEqual([]);
  });

  it('names a citation of a file that is not there, and passes one that is', () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrl-cited-'));
    try {
      const probe = join(dir, 'probe.ts');
      writeFileSync(probe, '// see tests/docs/links.test.ts\n// tested in tests/models/no-such-test.test.ts\n');
      expect(missingCitations([probe])).toEqual([`${relative(root, probe)}:2: tests/models/no-such-test.test.ts`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
