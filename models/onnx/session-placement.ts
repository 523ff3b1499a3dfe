// Where ONNX Runtime ran each node of the graphs metrl opened, and what the graphs it ran hold (models/ layer, ONNX
// Runtime engine): the check that no compute node of a GPU session falls back to the CPU provider, and that 16-bit
// weights stay 16-bit in the graph ORT actually runs. ORT says where it placed every node only in its verbose session
// log, which it writes to the process's stderr (onnxruntime-node offers no logging callback), so a command is run in
// a child process with METRL_ORT_PLACEMENT set (session.ts): each session then writes a marker line, its verbose log
// and the graph after ORT's optimizations (optimizedModelFilePath). The log's placement block reads
//   Node placements
//    Node(s) placed on [CPUExecutionProvider]. Number of nodes: 43
//     Shape (n_Shape_725)
//    Node(s) placed on [WebGpuExecutionProvider]. Number of nodes: 802
//     …
// or ` All nodes placed on [WebGpuExecutionProvider]. Number of nodes: N` with no list; it covers the subgraphs too.
// One session opens at a time on one thread (bench/every-graph.ts runs with --threads 1): worker threads' marker
// lines could interleave with another thread's log.
// A node on the CPU is allowed in a GPU session only by ALLOWED_ON_CPU; the element types that rule reads are inferred
// over the optimized graph, which carries no value_info.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as Onnx } from 'onnx-proto';
import { PLACEMENT_MARKER, PLACEMENT_VARIABLE } from './session.ts';

const { onnx } = onnxProto;
const T = onnx.TensorProto.DataType;

export const CPU_PROVIDER = 'CPUExecutionProvider';

/** One node as ORT placed it. */
interface PlacedNode {
  op: string;
  name: string;
  provider: string;
}

/** One session the command opened: its label (session.ts), its nodes' placement and the graph ORT optimized. */
export interface SessionPlacement {
  label: string;
  nodes: PlacedNode[];
  /** The optimized ModelProto. */
  model: Onnx.ModelProto;
  /** Copy nodes between the host and the device (MemcpyFromHost / MemcpyToHost) ORT inserted. */
  copies: number;
  /** CPU nodes of a session on another provider that ALLOWED_ON_CPU does not cover (the check's failures). */
  cpuCompute: PlacedNode[];
  /** CPU nodes of such a session that it does cover. */
  cpuAllowed: PlacedNode[];
}

/**
 * What a GPU session may leave on the CPU provider. ORT places small shape and index computations on the CPU on
 * purpose (int64 arithmetic on a few values, whose results it needs on the host anyway: "ORT explicitly assigns shape
 * related ops to CPU", its log says), and WebGPU has no int64 kernels for most of them; a float node on the CPU is a
 * fallback and fails the check.
 */
const ALLOWED_ON_CPU: { rule: string; allows: (node: Onnx.INodeProto, outputs: (number | undefined)[]) => boolean }[] =
  [
    {
      rule: 'shape and index arithmetic: every output int64, int32 or bool',
      allows: (_, outputs) =>
        outputs.length > 0 && outputs.every((t) => t === T.INT64 || t === T.INT32 || t === T.BOOL),
    },
    {
      // The output head's row chunks (hf/hf-train-head.ts): ORT's WebGPU provider has no Loop kernel. The body runs on the
      // device (the implicit inputs, rows and head weight, stay there); the host gets each iteration's scan outputs
      // (a chunk's [rows] log-probs and entropies, or its [rows, H] input gradient) and the Loop's result is uploaded
      // once: R or R·H floats a pass, the size of the head's input, never the [R, V] logits.
      rule: 'Loop (control flow; its body runs on the device)',
      allows: (node) => node.opType === 'Loop',
    },
  ];

/** The rules of ALLOWED_ON_CPU, for reports. */
export const allowedOnCpu = (): string[] => ALLOWED_ON_CPU.map((a) => a.rule);

/**
 * Run `command` (argv, the first element a program) with METRL_ORT_PLACEMENT set, wait at most `timeoutMs`, and read
 * every session it opened. Throws with the command's stderr tail when it fails.
 */
export function placementsOf(
  command: string[],
  options: { timeoutMs: number; env?: Record<string, string> },
): SessionPlacement[] {
  const dir = mkdtempSync(join(tmpdir(), 'metrl-placement-'));
  try {
    const child = spawnSync(command[0], command.slice(1), {
      env: { ...process.env, ...options.env, [PLACEMENT_VARIABLE]: dir },
      encoding: 'utf8',
      timeout: options.timeoutMs,
      maxBuffer: 1 << 30,
    });
    if (child.status !== 0) {
      const why = child.error
        ? String(child.error)
        : child.signal
          ? `killed (${child.signal})`
          : `exit ${child.status}`;
      const tail = (child.stderr ?? '')
        .split('\n')
        .filter((l) => !/\[[VI]:onnxruntime/.test(l))
        .slice(-12)
        .join('\n');
      throw new Error(`${command.join(' ')}: ${why}\n${tail}`);
    }
    return parsePlacements(child.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The sessions in a stderr written under METRL_ORT_PLACEMENT (their optimized graphs read while they exist). */
function parsePlacements(stderr: string): SessionPlacement[] {
  const sessions: { label: string; file: string; lines: string[] }[] = [];
  for (const line of stderr.split('\n')) {
    if (line.startsWith(`${PLACEMENT_MARKER} `)) {
      const [file, ...label] = line.slice(PLACEMENT_MARKER.length + 1).split(' ');
      sessions.push({ file, label: label.join(' '), lines: [] });
      continue;
    }
    const at = line.indexOf('VerifyEachNodeIsAssignedToAnEp] ');
    if (at >= 0 && sessions.length > 0) sessions.at(-1)!.lines.push(line.slice(at + 32));
  }
  return sessions.map(({ label, file, lines }) => {
    const model = onnx.ModelProto.decode(readFileSync(file));
    const graphNodes = allNodes(model.graph!);
    const nodes: PlacedNode[] = [];
    let provider: string | null = null;
    for (const line of lines) {
      const all = /^ ?All nodes placed on \[(\w+)\]/.exec(line);
      if (all) {
        for (const n of graphNodes) nodes.push({ op: n.opType!, name: n.name!, provider: all[1] });
        continue;
      }
      const some = /^ ?Node\(s\) placed on \[(\w+)\]/.exec(line);
      if (some) provider = some[1];
      const node = /^ {2}(\S+) \((.*)\)$/.exec(line);
      if (node && provider) nodes.push({ op: node[1], name: node[2], provider });
    }
    if (nodes.length === 0) throw new Error(`no node placement logged for the ${label} session`);
    const gpu = nodes.some((n) => n.provider !== CPU_PROVIDER);
    const types = outputTypes(model);
    const cpuCompute: PlacedNode[] = [];
    const cpuAllowed: PlacedNode[] = [];
    for (const n of nodes) {
      if (!gpu || n.provider !== CPU_PROVIDER) continue;
      const same = graphNodes.filter((g) => g.name === n.name && g.opType === n.op);
      const allowed =
        same.length > 0 && same.every((g) => ALLOWED_ON_CPU.some((a) => a.allows(g, types.get(g) ?? [undefined])));
      (allowed ? cpuAllowed : cpuCompute).push(n);
    }
    return {
      label,
      nodes,
      model,
      copies: nodes.filter((n) => n.op === 'MemcpyFromHost' || n.op === 'MemcpyToHost').length,
      cpuCompute,
      cpuAllowed,
    };
  });
}

/** Every node of a graph and of its subgraphs. */
function allNodes(graph: Onnx.IGraphProto): Onnx.INodeProto[] {
  return (graph.node ?? []).flatMap((n) => [
    n,
    ...(n.attribute ?? []).flatMap((a) => [...(a.g ? [a.g] : []), ...(a.graphs ?? [])]).flatMap(allNodes),
  ]);
}

/** Element type of a declared input or output. */
const declared = (v: Onnx.IValueInfoProto): number | undefined => v.type?.tensorType?.elemType ?? undefined;

/**
 * Each node's output element types, inferred over the graph and its subgraphs (scopes nest: a subgraph reads its
 * outer graphs' values). The rules cover the ops metrl's graphs and ORT's rewrites of them use; an op they do not know
 * takes its first input's type, which holds for element-wise, shape-moving, gathering and product ops alike.
 */
function outputTypes(model: Onnx.ModelProto): Map<Onnx.INodeProto, (number | undefined)[]> {
  const result = new Map<Onnx.INodeProto, (number | undefined)[]>();
  const walk = (graph: Onnx.IGraphProto, outer: Map<string, number>) => {
    const scope = new Map(outer);
    for (const v of graph.input ?? []) scope.set(v.name!, declared(v)!);
    for (const t of graph.initializer ?? []) scope.set(t.name!, t.dataType!);
    const typeOf = (name: string) => (name === '' ? undefined : scope.get(name));
    const record = (n: Onnx.INodeProto, types: (number | undefined)[]) => {
      result.set(n, types);
      n.output!.forEach((o, i) => types[i] !== undefined && scope.set(o, types[i]!));
    };
    // Nodes may come in any order: passes until every node is typed, or a pass types none (those keep what is known).
    const nodes = graph.node ?? [];
    for (let pending = nodes; pending.length > 0; ) {
      const next = pending.filter((n) => {
        const types = typeRule(n, typeOf);
        if (types.some((t) => t === undefined)) return true;
        record(n, types);
        return false;
      });
      if (next.length === pending.length) for (const n of next) record(n, typeRule(n, typeOf));
      pending = next.length === pending.length ? [] : next;
    }
    for (const n of nodes)
      for (const a of n.attribute ?? []) for (const g of [a.g, ...(a.graphs ?? [])]) if (g) walk(g, scope);
  };
  walk(model.graph!, new Map());
  return result;
}

const BOOL_OPS = new Set([
  'Equal',
  'Less',
  'LessOrEqual',
  'Greater',
  'GreaterOrEqual',
  'Not',
  'And',
  'Or',
  'Xor',
  'IsNaN',
  'IsInf',
]);
const INT64_OPS = new Set(['Shape', 'Size', 'NonZero', 'ArgMax', 'ArgMin']);

function typeRule(n: Onnx.INodeProto, typeOf: (name: string) => number | undefined): (number | undefined)[] {
  const attribute = (name: string) => n.attribute?.find((a) => a.name === name);
  const inputs = n.input ?? [];
  const all = (t: number | undefined) => n.output!.map(() => t);
  const op = n.opType!;
  if (op === 'Cast') return all(Number(attribute('to')?.i ?? 0));
  if (INT64_OPS.has(op)) return all(T.INT64);
  if (BOOL_OPS.has(op)) return all(T.BOOL);
  if (op === 'ConstantOfShape' || op === 'Constant') return all(attribute('value')?.t?.dataType ?? T.FLOAT);
  if (op === 'Where') return all(typeOf(inputs[1]));
  if (op === 'OneHot') return all(typeOf(inputs[2]));
  if (op === 'Loop' || op === 'If') {
    const body = attribute(op === 'Loop' ? 'body' : 'then_branch')?.g;
    // A Loop's body outputs start with its condition.
    const first = op === 'Loop' ? 1 : 0;
    return n.output!.map((_, i) => {
      const out = body?.output?.[i + first];
      return out ? declared(out) : undefined;
    });
  }
  return all(typeOf(inputs[0]));
}

/** Bytes of one element of each ONNX element type metrl's graphs hold. */
const ELEMENT_BYTES: Record<number, number> = {
  [T.FLOAT]: 4,
  [T.FLOAT16]: 2,
  [T.BFLOAT16]: 2,
  [T.INT64]: 8,
  [T.INT32]: 4,
  [T.BOOL]: 1,
  [T.DOUBLE]: 8,
  [T.UINT8]: 1,
  [T.INT8]: 1,
};

/** Bytes of the initializers of a graph and its subgraphs, by ONNX element type name (FLOAT, BFLOAT16, …). */
export function initializerBytes(model: Onnx.ModelProto): Record<string, number> {
  const bytes: Record<string, number> = {};
  const walk = (graph: Onnx.IGraphProto) => {
    for (const t of graph.initializer ?? []) {
      const elements = (t.dims ?? []).reduce((a: number, d) => a * Number(d), 1);
      const name = T[t.dataType!] ?? String(t.dataType);
      bytes[name] = (bytes[name] ?? 0) + elements * (ELEMENT_BYTES[t.dataType!] ?? Number.NaN);
    }
    for (const n of graph.node ?? [])
      for (const a of n.attribute ?? []) for (const g of [a.g, ...(a.graphs ?? [])]) if (g) walk(g);
  };
  walk(model.graph!);
  return bytes;
}
