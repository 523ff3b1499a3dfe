// A small builder for ONNX graphs: nodes, float32 / int64 initializers, inputs
// and outputs with symbolic dimensions, serialised with onnx-proto (the ONNX protobuf schema's maintained JS bindings)
// to the bytes of a ModelProto that ONNX Runtime opens from memory (models/onnx/session.ts). No file, no Python, no
// conversion step: an architecture's graph (e.g. models/onnx/builtin/builtin-graph.ts) is written in TypeScript at load time
// from its config and its weights.
//
// Names: every node output gets a fresh name unless the caller gives one; `op` returns the output names so graphs read
// as nested calls (`b.op('MatMul', [x, w])`). Constants become initializers (the ONNX way for small shapes and axes).
import onnxProto from 'onnx-proto';
import type { onnx as Onnx } from 'onnx-proto';
import { SHARE_MIN_BYTES, WEIGHT_FILE, type SharedWeightFile } from './weight-file.ts';
import { sixteenBitBytes, type WeightDtype } from './weight-encoding.ts';

const { onnx } = onnxProto;

/** ONNX element types this project uses. */
export type ElementType = 'float32' | 'int64' | 'int32' | 'bool';

/** A dimension: a fixed size or a symbolic name (batch, sequence, past_sequence …). */
export type Dim = number | string;

export type AttributeValue =
  | number
  | string
  | number[]
  | { floats: number[] }
  | { float: number }
  | { graph: Onnx.IGraphProto };

const ELEMENT: Record<ElementType, number> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  bool: onnx.TensorProto.DataType.BOOL,
};

/** The default opset of the standard domain (ONNX 1.12's, which ORT ≥ 1.12 implements; LayerNormalization etc.). */
const DEFAULT_OPSET = 17;
/**
 * Initializer bytes a serialised model holds inline at most. A ModelProto must stay under protobuf's 2 GiB, so a larger
 * model (a Hugging Face checkpoint of more than about 400 M float32 parameters) keeps its weights in an external data
 * file beside it (toModel; OrtSession writes both to a temporary folder and opens the model from there).
 */
export const MAX_INLINE_BYTES = 1.5 * 2 ** 30;
/** External data offsets are aligned to this (a page, so ORT may map the file). */
const EXTERNAL_ALIGN = 4096;
/** The external data file's name, beside the model. */
export const EXTERNAL_FILE = 'weights.bin';

/** A serialised model: the ModelProto's bytes and, for a large one, its external weights in file order. */
export interface SerializedModel {
  model: Uint8Array;
  external: { pieces: { offset: number; bytes: Uint8Array }[]; length: number } | null;
  /** The shared weight file its large initializers refer to (then `external` is null): load it from that folder. */
  shared?: SharedWeightFile;
}

/** IR version 8 (ONNX 1.10+), what opset 17 needs; ORT 1.30 reads up to 10. */
const IR_VERSION = 8;
/** Microsoft's contrib operators (fused attention, rotary embeddings, simplified layer norm) live in this domain. */
export const MS_DOMAIN = 'com.microsoft';

function valueInfo(name: string, type: ElementType, dims: Dim[]): Onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType: ELEMENT[type],
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: AttributeValue): Onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof value === 'string') return { name, type: T.STRING, s: new TextEncoder().encode(value) };
  if (typeof value === 'number') return { name, type: T.INT, i: value };
  if (Array.isArray(value)) return { name, type: T.INTS, ints: value };
  if ('float' in value) return { name, type: T.FLOAT, f: value.float };
  if ('graph' in value) return { name, type: T.GRAPH, g: value.graph };
  return { name, type: T.FLOATS, floats: value.floats };
}

export class GraphBuilder {
  private readonly nodes: Onnx.INodeProto[] = [];
  /** Where op() puts nodes: the graph's own list, or a subgraph's while subgraph() builds one. */
  private sink: Onnx.INodeProto[] = this.nodes;
  private readonly initializers: Onnx.ITensorProto[] = [];
  /**
   * The float32 initializers' bytes (views of the caller's arrays), or how to read them, set into their protos when
   * serialised: a weight already in a shared weight file is never read again.
   */
  private readonly weightBytes = new Map<Onnx.ITensorProto, { byteLength: number; read: () => Uint8Array }>();
  private readonly inputs: Onnx.IValueInfoProto[] = [];
  private readonly outputs: Onnx.IValueInfoProto[] = [];
  private readonly names = new Set<string>();
  private readonly domains = new Set<string>();
  private counter = 0;

  constructor(readonly graphName: string) {}

  /** A fresh value name with a readable prefix. */
  fresh(prefix: string): string {
    let name: string;
    do name = `${prefix}_${this.counter++}`;
    while (this.names.has(name));
    this.names.add(name);
    return name;
  }

  private claim(name: string): string {
    if (this.names.has(name)) throw new Error(`graph ${this.graphName}: value name ${name} used twice`);
    this.names.add(name);
    return name;
  }

  input(name: string, type: ElementType, dims: Dim[]): string {
    this.inputs.push(valueInfo(this.claim(name), type, dims));
    return name;
  }

  /** The graph outputs' names, in order. */
  outputNames(): string[] {
    return this.outputs.map((o) => o.name!);
  }

  /** Mark a value as a graph output (its element type and dims as declared; symbolic dims are only names). */
  output(name: string, type: ElementType, dims: Dim[]): void {
    this.outputs.push(valueInfo(name, type, dims));
  }

  /**
   * A float32 initializer (weights), written into the model as raw little-endian data when it is serialised: `data` is
   * kept, not copied (a large model's weights are not held twice), so it must not change before then. Given as a
   * function, it is read only if the model needs its bytes (not when a shared weight file holds them already).
   */
  floats(
    name: string,
    data: Float32Array | (() => Float32Array),
    dims: number[],
    stored: WeightDtype = 'float32',
  ): string {
    const expected = dims.reduce((a, b) => a * b, 1);
    const read = () => {
      const values = typeof data === 'function' ? data() : data;
      if (values.length !== expected)
        throw new Error(`initializer ${name}: ${values.length} values for shape [${dims}]`);
      return stored === 'float32'
        ? new Uint8Array(values.buffer, values.byteOffset, values.byteLength)
        : sixteenBitBytes(values, stored, `weight ${name}`);
    };
    if (typeof data !== 'function') read();
    const dataType =
      stored === 'float32'
        ? ELEMENT.float32
        : stored === 'bfloat16'
          ? onnx.TensorProto.DataType.BFLOAT16
          : onnx.TensorProto.DataType.FLOAT16;
    const proto: Onnx.ITensorProto = { name: this.claim(name), dataType, dims };
    this.initializers.push(proto);
    this.weightBytes.set(proto, { byteLength: expected * (stored === 'float32' ? 4 : 2), read });
    return name;
  }

  /**
   * A weight read as float32: the initializer itself, or, stored 16-bit (weight-dtype.ts), a Cast of it to float32
   * where it is read (the product computes and accumulates in float32).
   */
  weight(
    name: string,
    data: Float32Array | (() => Float32Array),
    dims: number[],
    stored: WeightDtype = 'float32',
  ): string {
    const init = this.floats(stored === 'float32' ? name : `${name}.${stored}`, data, dims, stored);
    return stored === 'float32' ? init : this.op1('Cast', [init], { to: ELEMENT.float32 });
  }

  /** An int64 constant (shapes, axes, indices) as an initializer with a fresh name. */
  ints(values: number[], dims: number[] = [values.length], prefix = 'const'): string {
    const name = this.fresh(prefix);
    const raw = new BigInt64Array(values.map((v) => BigInt(v)));
    this.initializers.push({ name, dataType: ELEMENT.int64, dims, rawData: new Uint8Array(raw.buffer) });
    return name;
  }

  /** A float32 scalar constant (shape []). */
  scalar(value: number, prefix = 'scalar'): string {
    const name = this.fresh(prefix);
    this.initializers.push({
      name,
      dataType: ELEMENT.float32,
      dims: [],
      rawData: new Uint8Array(Float32Array.of(value).buffer),
    });
    return name;
  }

  /**
   * One node. `outputs`: the number of outputs (fresh names) or their names. Returns the output names. An empty
   * string in `inputs` is ONNX's "optional input left out".
   */
  op(
    type: string,
    inputs: string[],
    attributes: Record<string, AttributeValue> = {},
    outputs: number | string[] = 1,
    domain = '',
  ): string[] {
    const outNames =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, () => this.fresh(type.toLowerCase()))
        : outputs.map((n) => this.claim(n));
    if (domain) this.domains.add(domain);
    this.sink.push({
      opType: type,
      domain,
      name: this.fresh(`n_${type}`),
      input: inputs,
      output: outNames,
      attribute: Object.entries(attributes).map(([k, v]) => attribute(k, v)),
    });
    return outNames;
  }

  /**
   * A subgraph (an If node's branch, a Loop's body): the nodes `build` emits go into it, and the values it returns are
   * its outputs; `inputs` are its own inputs (a Loop body's iteration number and condition, names from fresh()). Its
   * nodes may read any value of the enclosing graph; initializers made meanwhile stay the enclosing graph's.
   */
  subgraph(
    name: string,
    build: () => { name: string; type: ElementType; dims: Dim[] }[],
    inputs: { name: string; type: ElementType; dims: Dim[] }[] = [],
  ): Onnx.IGraphProto {
    const outer = this.sink;
    const nodes: Onnx.INodeProto[] = [];
    this.sink = nodes;
    try {
      const outputs = build();
      return {
        name,
        node: nodes,
        input: inputs.map((i) => valueInfo(i.name, i.type, i.dims)),
        initializer: [],
        output: outputs.map((o) => valueInfo(o.name, o.type, o.dims)),
      };
    } finally {
      this.sink = outer;
    }
  }

  /** A node with one output (the common case). */
  op1(
    type: string,
    inputs: string[],
    attributes: Record<string, AttributeValue> = {},
    name?: string,
    domain = '',
  ): string {
    return this.op(type, inputs, attributes, name ? [name] : 1, domain)[0];
  }

  /** The serialised ModelProto, every initializer inline (models under MAX_INLINE_BYTES: see toModel). */
  toBytes(opset = DEFAULT_OPSET): Uint8Array {
    const { model, external } = this.toModel(opset, Infinity);
    if (external) throw new Error('unreachable: an inline model has no external data');
    return model;
  }

  /**
   * The serialised model. When its weights come to more than `maxInlineBytes`, every float32 initializer goes to the
   * external data file EXTERNAL_FILE instead (ONNX's external data: location, offset and length on the tensor), in
   * the order they were made, each at an offset aligned to EXTERNAL_ALIGN.
   */
  toModel(opset = DEFAULT_OPSET, maxInlineBytes = MAX_INLINE_BYTES, shared?: SharedWeightFile): SerializedModel {
    if (shared) return this.toSharedModel(opset, shared);
    let total = 0;
    for (const { byteLength } of this.weightBytes.values()) total += byteLength;
    const outside = total > maxInlineBytes;
    const pieces: { offset: number; bytes: Uint8Array }[] = [];
    let length = 0;
    const initializer = this.initializers.map((proto) => {
      const weight = this.weightBytes.get(proto);
      if (!weight) return proto;
      const bytes = weight.read();
      if (!outside) return { ...proto, rawData: bytes };
      const offset = Math.ceil(length / EXTERNAL_ALIGN) * EXTERNAL_ALIGN;
      pieces.push({ offset, bytes });
      length = offset + bytes.byteLength;
      const entry = (key: string, value: string | number) => ({ key, value: String(value) });
      return {
        ...proto,
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [entry('location', EXTERNAL_FILE), entry('offset', offset), entry('length', bytes.byteLength)],
      };
    });
    return { model: this.encode(opset, initializer), external: outside ? { pieces, length } : null };
  }

  /**
   * The serialised model with every float32 initializer of at least SHARE_MIN_BYTES in `shared` (placed there by
   * name unless it is already: weight-file.ts), the rest inline.
   */
  private toSharedModel(opset: number, shared: SharedWeightFile): SerializedModel {
    const initializer = this.initializers.map((proto) => {
      const weight = this.weightBytes.get(proto);
      if (!weight) return proto;
      if (weight.byteLength < SHARE_MIN_BYTES) return { ...proto, rawData: weight.read() };
      const { offset, length } = shared.has(proto.name!)
        ? shared.place(proto.name!, null, weight.byteLength)
        : shared.place(proto.name!, weight.read());
      const entry = (key: string, value: string | number) => ({ key, value: String(value) });
      return {
        ...proto,
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [entry('location', WEIGHT_FILE), entry('offset', offset), entry('length', length)],
      };
    });
    return { model: this.encode(opset, initializer), external: null, shared };
  }

  private encode(opset: number, initializer: Onnx.ITensorProto[]): Uint8Array {
    const opsetImport: Onnx.IOperatorSetIdProto[] = [{ domain: '', version: opset }];
    for (const d of this.domains) opsetImport.push({ domain: d, version: 1 });
    const model: Onnx.IModelProto = {
      irVersion: IR_VERSION,
      producerName: 'metrl',
      opsetImport,
      graph: { name: this.graphName, node: this.nodes, initializer, input: this.inputs, output: this.outputs },
    };
    return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
  }
}
