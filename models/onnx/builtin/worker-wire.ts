// Tensors as they cross between the main thread and an ONNX Runtime worker thread (worker-pool.ts,
// worker-main.ts): an onnxruntime Tensor loses its class in a message, so it travels as its type, data and dims.
// Its own file so that the worker's code does not import the pool that starts it by path.
import { Tensor } from 'onnxruntime-common';
import type { Feeds } from '../session.ts';

/** A tensor as it crosses threads (an onnxruntime Tensor loses its class in a message). */
export interface WireTensor {
  type: Tensor.Type;
  data: Tensor.DataType;
  dims: readonly number[];
}

export const toWire = (feeds: Feeds): Record<string, WireTensor> =>
  Object.fromEntries(Object.entries(feeds).map(([name, t]) => [name, { type: t.type, data: t.data, dims: t.dims }]));
export const fromWire = (wire: Record<string, WireTensor>): Feeds =>
  Object.fromEntries(
    Object.entries(wire).map(([name, t]) => [name, new Tensor(t.type, t.data as Float32Array, t.dims)]),
  );
