// Test helper: the file-level module graph of the project's sources, as tests/layout/imports.test.ts checks it. Every
// way one source file reaches another counts: static imports (type-only ones too: a type circle is a design circle),
// `export … from`, `import()`, and module paths given as strings to a loader (`new Worker(new URL('./w.mjs',
// import.meta.url))`, `import.meta.resolve`, tsx's `tsImport`). It reads every string literal outside comments that is
// a relative path to an existing source file, so a new way of loading a module by path is covered too. Cycles are the
// strongly connected components of more than one file, or a file that reaches itself.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SOURCE = /\.(ts|mts|mjs|js)$/;

/** The source files under `roots` (folders of `base`), relative to `base`, sorted. */
export function sourceFiles(base: string, roots: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'node_modules' && !name.startsWith('.')) walk(path);
      } else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(relative(base, path));
    }
  };
  for (const root of roots) if (existsSync(join(base, root))) walk(join(base, root));
  return out.sort();
}

/**
 * The string literals of a source text outside comments (template literals without substitutions included). A `/`
 * after an operator, a bracket or a keyword-free start begins a regular expression literal, which is skipped.
 */
export function stringLiterals(src: string): string[] {
  const out: string[] = [];
  let i = 0;
  let last = ''; // the previous significant character
  while (i < src.length) {
    const c = src[i];
    if (c === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 2;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      let text = '';
      let plain = true;
      while (j < src.length && src[j] !== c) {
        if (src[j] === '\\') {
          text += src[j + 1];
          j += 2;
          continue;
        }
        if (c === '`' && src[j] === '$' && src[j + 1] === '{') {
          plain = false;
          let depth = 1;
          j += 2;
          while (j < src.length && depth > 0) {
            if (src[j] === '{') depth++;
            else if (src[j] === '}') depth--;
            j++;
          }
          continue;
        }
        text += src[j];
        j++;
      }
      if (plain) out.push(text);
      i = j + 1;
      last = c;
      continue;
    }
    if (c === '/' && (last === '' || '(,=:[!&|?{};+-*%<>~^'.includes(last))) {
      let j = i + 1;
      let inClass = false;
      while (j < src.length && src[j] !== '\n') {
        if (src[j] === '\\') j++;
        else if (src[j] === '[') inClass = true;
        else if (src[j] === ']') inClass = false;
        else if (src[j] === '/' && !inClass) break;
        j++;
      }
      i = j + 1;
      last = '/';
      continue;
    }
    if (!/\s/.test(c)) last = c;
    i++;
  }
  return out;
}

/** file → the files it reaches, both relative to `base`. */
export function importGraph(base: string, files: readonly string[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const literal of stringLiterals(readFileSync(join(base, file), 'utf8'))) {
      if (!/^\.\.?\//.test(literal) || !SOURCE.test(literal)) continue;
      const target = resolve(base, dirname(file), literal);
      if (existsSync(target) && statSync(target).isFile()) targets.add(relative(base, target));
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Every import cycle, each as the files around it in order, the first file repeated at the end. */
export function importCycles(graph: Map<string, Set<string>>): string[][] {
  // Tarjan's strongly connected components, iteratively (the graph has hundreds of files).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edges: string[]; at: number }[] = [];
    const visit = (node: string) => {
      index.set(node, next);
      low.set(node, next++);
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: [...(graph.get(node) ?? [])], at: 0 });
    };
    visit(start);
    while (work.length > 0) {
      const top = work[work.length - 1];
      if (top.at < top.edges.length) {
        const to = top.edges[top.at++];
        if (!index.has(to)) visit(to);
        else if (onStack.has(to)) low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== top.node);
        if (component.length > 1 || graph.get(top.node)?.has(top.node)) components.push(component);
      }
    }
  }
  // One cycle through each component, for the message: a shortest way back to its first file.
  return components.map((component) => {
    const inside = new Set(component);
    const first = [...component].sort()[0];
    const previous = new Map<string, string>();
    const queue = [first];
    while (queue.length > 0) {
      const node = queue.shift()!;
      for (const to of graph.get(node) ?? []) {
        if (!inside.has(to)) continue;
        if (to === first) {
          const path = [node];
          while (path[0] !== first) path.unshift(previous.get(path[0])!);
          return [...path, first];
        }
        if (!previous.has(to)) {
          previous.set(to, node);
          queue.push(to);
        }
      }
    }
    return [first, first];
  });
}
