// The ONNX graph builder (models/onnx/graph-builder.ts) and the synchronous session (models/onnx/session.ts): a graph
// written in TypeScript, serialised with onnx-proto, opened by ONNX Runtime from memory, gives the values computed by
// hand; symbolic dimensions accept any size; a graph ORT refuses is a UserError.
import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import onnxProto from 'onnx-proto';
import { tmpdir } from 'node:os';
import { EXTERNAL_FILE, GraphBuilder, MS_DOMAIN } from '../../models/onnx/graph-builder.ts';
import { OrtSession, floatTensor, int64Tensor } from '../../models/onnx/session.ts';
import { UserError } from '../../core/errors.ts';

describe('GraphBuilder', () => {
  it('builds y = relu(x W + b)[:, gather] that ORT runs with symbolic batch sizes', () => {
    const b = new GraphBuilder('tiny');
    const x = b.input('x', 'float32', ['batch', 3]);
    const idx = b.input('idx', 'int64', ['k']);
    const w = b.floats('w', Float32Array.from([1, -1, 2, 0, 0.5, -2]), [3, 2]);
    const bias = b.floats('bias', Float32Array.from([0.25, -0.5]), [2]);
    const h = b.op1('Relu', [b.op1('Add', [b.op1('MatMul', [x, w]), bias])]);
    b.op1('Gather', [h, idx], { axis: 1 }, 'y');
    b.output('y', 'float32', ['batch', 'k']);
    const session = new OrtSession(b.toBytes(), { threads: 1 });
    expect(session.inputNames).toEqual(['x', 'idx']);
    for (const rows of [1, 4]) {
      const xs = Float32Array.from({ length: rows * 3 }, (_, i) => (i % 5) - 2);
      const y = session.run({ x: floatTensor(xs, [rows, 3]), idx: int64Tensor([1, 0, 1], [3]) }).y;
      expect(y.dims).toEqual([rows, 3]);
      const data = y.data as Float32Array;
      for (let r = 0; r < rows; r++) {
        const [a, c, e] = xs.slice(r * 3, r * 3 + 3);
        const col0 = Math.max(0, a * 1 + c * 2 + e * 0.5 + 0.25);
        const col1 = Math.max(0, a * -1 + c * 0 + e * -2 - 0.5);
        expect(Array.from(data.slice(r * 3, r * 3 + 3))).toEqual([col1, col0, col1].map((v) => Math.fround(v)));
      }
    }
    session.dispose();
  });

  it('emits com.microsoft operators (SimplifiedLayerNormalization) that ORT resolves', () => {
    const b = new GraphBuilder('norm');
    const x = b.input('x', 'float32', ['n', 4]);
    const g = b.floats('g', Float32Array.from([1, 2, 3, 4]), [4]);
    b.op('SimplifiedLayerNormalization', [x, g], { axis: -1, epsilon: { float: 1e-5 } }, ['y'], '');
    b.output('y', 'float32', ['n', 4]);
    const session = new OrtSession(b.toBytes(), { threads: 1 });
    const xs = Float32Array.from([1, 2, 3, 4]);
    const y = session.run({ x: floatTensor(xs, [1, 4]) }).y.data as Float32Array;
    const rms = Math.sqrt((1 + 4 + 9 + 16) / 4 + 1e-5);
    [1, 2, 3, 4].forEach((v, i) => expect(y[i]).toBeCloseTo((v / rms) * (i + 1), 5));
    session.dispose();
    expect(MS_DOMAIN).toBe('com.microsoft');
  });

  it('reports a graph ORT cannot build as a UserError naming it', () => {
    const b = new GraphBuilder('broken');
    const x = b.input('x', 'float32', [2]);
    b.op1('NoSuchOperator', [x], {}, 'y');
    b.output('y', 'float32', [2]);
    expect(() => new OrtSession(b.toBytes(), { label: 'broken test' })).toThrow(UserError);
    expect(() => new OrtSession(b.toBytes(), { label: 'broken test' })).toThrow(/broken test/);
  });

  it('puts the weights in an external data file past maxInlineBytes, and ORT reads them there', () => {
    // x @ W1 + b, then @ W2: three float32 initializers (one not a multiple of the alignment) and an int64 constant.
    const build = () => {
      const b = new GraphBuilder('external');
      const x = b.input('x', 'float32', ['n', 5]);
      const w1 = b.floats(
        'w1',
        Float32Array.from({ length: 5 * 7 }, (_, i) => Math.sin(i)),
        [5, 7],
      );
      const bias = b.floats(
        'bias',
        Float32Array.from({ length: 7 }, (_, i) => i / 7),
        [7],
      );
      const w2 = b.floats(
        'w2',
        Float32Array.from({ length: 7 * 3 }, (_, i) => Math.cos(i)),
        [7, 3],
      );
      const h = b.op1('Reshape', [b.op1('Add', [b.op1('MatMul', [x, w1]), bias]), b.ints([-1, 7])]);
      b.op1('MatMul', [h, w2], {}, 'y');
      b.output('y', 'float32', ['n', 3]);
      return b;
    };
    const inline = build().toModel(undefined, 1e9);
    const outside = build().toModel(undefined, 100);
    expect(inline.external).toBeNull();
    expect(outside.external!.pieces.map((p) => [p.offset, p.bytes.byteLength])).toEqual([
      [0, 140],
      [4096, 28],
      [8192, 84],
    ]);
    const stored = onnxProto.onnx.ModelProto.decode(outside.model).graph!.initializer!;
    expect(
      stored
        .filter((t) => t.dataLocation === onnxProto.onnx.TensorProto.DataLocation.EXTERNAL)
        .map((t) => [t.name, t.rawData?.length ?? 0, t.externalData!.map((e) => e.value).join(' ')]),
    ).toEqual([
      ['w1', 0, 'weights.bin 0 140'],
      ['bias', 0, 'weights.bin 4096 28'],
      ['w2', 0, 'weights.bin 8192 84'],
    ]);
    const xs = floatTensor(
      Float32Array.from({ length: 10 }, (_, i) => i - 4),
      [2, 5],
    );
    const before = new Set(readdirSync(tmpdir()));
    const [a, c] = [new OrtSession(inline, { threads: 1 }), new OrtSession(outside, { threads: 1 })];
    expect(readdirSync(tmpdir()).filter((f) => f.startsWith('metrl-onnx-') && !before.has(f))).toEqual([]); // folder removed once read
    expect(Array.from(c.run({ x: xs }).y.data as Float32Array)).toEqual(
      Array.from(a.run({ x: xs }).y.data as Float32Array),
    );
    expect(EXTERNAL_FILE).toBe('weights.bin');
    a.dispose();
    c.dispose();
  });
});
