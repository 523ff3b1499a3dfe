// `npm run bench -- placement`: where ONNX Runtime places every graph metrl builds on a GPU provider
// (METRL_BENCH_PLACEMENT_DEVICE, default webgpu; bench/every-graph.ts opens them, session-placement.ts reads ORT's
// verbose log): per session, its nodes, the CPU nodes the allow-list covers (shape and index arithmetic, the head's
// Loop), the compute nodes left on the CPU (the placement test holds these at 0) and the copy nodes between host
// and device. Counts, not timings. On a machine without Node's TypeScript loader (the GPU machine's bundle),
// METRL_EVERY_GRAPH names the bundled every-graph script.
import { placementsOf } from '../models/onnx/session-placement.ts';
import type { BenchRow } from './table.ts';

const MODELS = ['llama', 'llama-bf16', 'qwen2', 'gemma3', 'idefics3', 'gemma3-softcap', 'builtin'];

export async function run(): Promise<BenchRow[]> {
  const device = process.env.METRL_BENCH_PLACEMENT_DEVICE ?? 'webgpu';
  const script = process.env.METRL_EVERY_GRAPH
    ? [process.env.METRL_EVERY_GRAPH]
    : ['bin/run-ts.js', 'bench/every-graph.ts'];
  const rows: BenchRow[] = [];
  for (const model of MODELS) {
    const sessions = placementsOf([process.execPath, ...script, device, model], { timeoutMs: 300_000 });
    for (const s of sessions) {
      const group = `placement ${device}: ${model}, ${s.label}`;
      const fallback = [...new Set(s.cpuCompute.map((n) => n.op))].join(', ');
      rows.push(
        { group, name: 'nodes', value: s.nodes.length, unit: 'nodes' },
        { group, name: 'CPU, allowed', value: s.cpuAllowed.length, unit: 'nodes' },
        { group, name: 'CPU, compute', value: s.cpuCompute.length, unit: 'nodes', note: fallback || undefined },
        { group, name: 'host-device copies', value: s.copies, unit: 'nodes' },
      );
    }
  }
  return rows;
}
