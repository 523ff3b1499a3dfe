// Cut a forward + backward ONNX model in two (models/ layer, ONNX Runtime engine): the forward part, which also returns
// every intermediate the backward part reads ("carried" values), and the backward part, which takes them as inputs.
// A learner then runs the forward, computes what it needs from the forward's outputs (the loss's gradient with respect
// to the log-probs), and runs the backward on it, without a second forward pass. ORT has no way to pause one run, and
// its inference build no training API; this is the cut done on the ModelProto.
//
// Nodes are assigned by the counter in their names (GraphBuilder names every node `n_<Type>_<counter>`, counting up):
// those created before the marker value `marker` (DiffGraph.beginBackward) are the forward part.
import onnxProto from 'onnx-proto';
import type { onnx as Onnx } from 'onnx-proto';

const { onnx } = onnxProto;

export interface SplitGraph {
  forward: Uint8Array;
  backward: Uint8Array;
  /** Forward values the backward part reads: outputs of `forward`, inputs of `backward`, same names. */
  carried: string[];
}

const counterOf = (name: string): number => Number(/_(\d+)$/.exec(name)?.[1] ?? NaN);

/** Split `model` at `marker` (a name from GraphBuilder.fresh). `forwardOutputs`: outputs kept on the forward side. */
export function splitAtMarker(model: Uint8Array, marker: string, forwardOutputs: string[]): SplitGraph {
  const full = onnx.ModelProto.decode(model);
  const graph = full.graph!;
  const cut = counterOf(marker);
  const nodes = graph.node ?? [];
  for (const n of nodes) if (!Number.isFinite(counterOf(n.name ?? ''))) throw new Error(`graph split: node ${n.name} has no counter`);
  const forwardNodes = nodes.filter((n) => counterOf(n.name!) < cut);
  const backwardNodes = nodes.filter((n) => counterOf(n.name!) > cut);
  const produced = new Map<string, Onnx.INodeProto>();
  for (const n of forwardNodes) for (const o of n.output ?? []) produced.set(o, n);
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name!, t]));
  const inputs = new Map((graph.input ?? []).map((v) => [v.name!, v]));
  const used = (ns: Onnx.INodeProto[]) => new Set(ns.flatMap((n) => (n.input ?? []).filter((x) => x !== '')));
  const forwardUses = used(forwardNodes);
  const backwardUses = used(backwardNodes);
  const carried = [...backwardUses].filter((name) => produced.has(name));
  for (const name of backwardUses) {
    if (!produced.has(name) && !initializers.has(name) && !inputs.has(name) && !backwardNodes.some((n) => (n.output ?? []).includes(name))) {
      throw new Error(`graph split: the backward part reads ${name}, which nothing defines`);
    }
  }
  /** A carried value's type: int64 for shapes, float32 otherwise; its shape left to ORT. */
  const carriedInfo = (name: string): Onnx.IValueInfoProto => ({
    name,
    type: { tensorType: { elemType: produced.get(name)!.opType === 'Shape' ? onnx.TensorProto.DataType.INT64 : onnx.TensorProto.DataType.FLOAT } },
  });
  const outputsByName = new Map((graph.output ?? []).map((v) => [v.name!, v]));
  const part = (name: string, ns: Onnx.INodeProto[], uses: Set<string>, extraInputs: Onnx.IValueInfoProto[], outputs: Onnx.IValueInfoProto[]): Uint8Array =>
    onnx.ModelProto.encode(
      onnx.ModelProto.create({
        ...full,
        graph: {
          name,
          node: ns,
          initializer: [...initializers.values()].filter((t) => uses.has(t.name!)),
          input: [...[...inputs.values()].filter((v) => uses.has(v.name!)), ...extraInputs],
          output: outputs,
        },
      }),
    ).finish();
  const forward = part(`${graph.name}-forward`, forwardNodes, forwardUses, [], [...forwardOutputs.map((n) => outputsByName.get(n)!), ...carried.map(carriedInfo)]);
  const backwardOutputs = (graph.output ?? []).filter((v) => !forwardOutputs.includes(v.name!));
  const backward = part(`${graph.name}-backward`, backwardNodes, backwardUses, carried.map(carriedInfo), backwardOutputs);
  return { forward, backward, carried };
}
