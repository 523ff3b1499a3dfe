// No import circle anywhere in the project's sources, counting every way one file reaches another (static and
// type-only imports, `export … from`, `import()`, worker and loader paths given as strings); and the check itself
// finds circles made of each of those, so a pass means the tree is clean, not that the reader missed the edges.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { importCycles, importGraph, sourceFiles, stringLiterals } from '../helpers/import-graph.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SOURCE_ROOTS = ['core', 'envs', 'rewards', 'models', 'trainer', 'eval', 'scripts', 'bench', 'bin', 'examples'];

describe('the source tree', () => {
  it('has no import circle, import() and worker paths included', () => {
    const files = sourceFiles(ROOT, SOURCE_ROOTS);
    expect(files.length).toBeGreaterThan(300);
    const graph = importGraph(ROOT, files);
    // The reader sees the dynamic edges the static-import tools miss: the registry loads HfPolicy by import().
    expect(graph.get('models/registry.ts')).toContain('models/hf/policy.ts');
    expect(graph.get('models/onnx/builtin/worker-pool.ts')).toContain('models/onnx/builtin/worker.mjs');
    expect(importCycles(graph).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });
});

describe('the import-cycle check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'metrl-imports-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };

  it('finds a circle through import(), a worker URL and a type-only import, and none in a chain', () => {
    write('a/one.ts', "import { two } from '../b/two.ts';\nexport const one = two;\n");
    write(
      'b/two.ts',
      "// import './nothing.ts' in a comment is no edge\nexport const two = () => import('../a/one.ts');\n",
    );
    write('w/pool.ts', "new Worker(new URL('./worker.mjs', import.meta.url));\n");
    write('w/worker.mjs', "await import('./main.ts');\n");
    write('w/main.ts', "import type { Pool } from './pool.ts';\nexport type P = Pool;\n");
    write('c/head.ts', "import { tail } from './tail.ts';\nexport const head = tail;\n");
    write('c/tail.ts', "export const tail = 1; // './head.ts'\n");
    const graph = importGraph(dir, sourceFiles(dir, ['a', 'b', 'w', 'c']));
    expect(graph.get('b/two.ts')).toEqual(new Set(['a/one.ts']));
    expect(graph.get('c/tail.ts')).toEqual(new Set());
    const cycles = importCycles(graph).map((cycle) => cycle.join(' -> '));
    expect(cycles.sort()).toEqual([
      'a/one.ts -> b/two.ts -> a/one.ts',
      'w/main.ts -> w/pool.ts -> w/worker.mjs -> w/main.ts',
    ]);
  });

  it('skips regular expressions and comments but keeps template literals without substitutions', () => {
    const substitution = '`$' + '{r}`'; // a template literal with a substitution, written without one here
    const literals = stringLiterals(
      `const r = /'x'/g; /* 'y' */ const s = \`./z.ts\`; const t = ${substitution}; // 'q'\n`,
    );
    expect(literals).toEqual(['./z.ts']);
  });
});
