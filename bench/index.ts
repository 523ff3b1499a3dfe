// `npm run bench`: runs every benchmark module and prints one table. `npm run bench -- chess` runs only the groups
// whose module name contains "chess". Figures depend on the machine: print them, never assert them in tests.
import { formatTable, type BenchRow } from './table.ts';
import { cpus } from 'node:os';

// One line per benchmark module: [name, loader, run only when named (too long for every `npm run bench`)].
const modules: Array<[string, () => Promise<{ run(): Promise<BenchRow[]> }>, boolean?]> = [
  ['chess', () => import('./chess.bench.ts')],
  ['shell', () => import('./shell.bench.ts')],
  ['boxes', () => import('./boxes.bench.ts')],
  ['mcst', () => import('./mcst.bench.ts')],
  ['mate', () => import('./mate.bench.ts')],
  ['rem', () => import('./rem.bench.ts')],
  ['eval', () => import('./eval.bench.ts')],
  ['grpo', () => import('./grpo.bench.ts')],
  ['rollout', () => import('./rollout.bench.ts')],
  ['async', () => import('./async.bench.ts'), true],
  ['model', () => import('./model.bench.ts')],
  ['onnx', () => import('./onnx.bench.ts')],
  ['onnx-learner', () => import('./onnx-learner.bench.ts')],
  ['cores', () => import('./cores.bench.ts')],
  ['hf', () => import('./hf.bench.ts')],
  ['hf-ort', () => import('./hf-ort.bench.ts')],
  ['train-hf', () => import('./train-hf.bench.ts'), true],
  ['gemma-1b', () => import('./gemma-1b.bench.ts'), true],
  ['qwen3-vl-2b', () => import('./qwen3-vl-2b.bench.ts'), true],
  ['placement', () => import('./placement.bench.ts'), true],
];

const filter = process.argv[2];
const rows: BenchRow[] = [];
for (const [name, load, byName] of modules) {
  if (filter ? !name.includes(filter) : byName) continue;
  process.stderr.write(`bench: ${name}…\n`);
  rows.push(...(await (await load()).run()));
}
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
console.log(formatTable(rows));
