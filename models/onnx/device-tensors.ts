// Tensors that stay on the execution device between ONNX Runtime runs: WebGPU's IO
// binding in onnxruntime-node. A session opened with `outputLocations` (session.ts) returns those outputs as
// 'gpu-buffer' tensors, which the next run takes as inputs without a copy through the host. A decode step then moves
// only its new token's embedding, masks and RoPE rows up and its logits down, instead of every layer's KV cache both
// ways (what made WebGPU slower than the CPU on an H200: docs/performance.md#on-a-gpu).
// Node's binding offers no call that copies host data into a GPU buffer or a GPU buffer back to the host (a bound
// tensor's download() throws there), so the two things a caller needs besides the decoder's own outputs are small
// graphs of their own, run on the same
// device (ORT's WebGPU provider shares one device between a process's sessions):
//   upload      Identity per input: host tensors in, device tensors out (the LoRA adapters, once per update)
//   gatherRows  Gather along axis 0 per input: device tensors in, their rows picked (a prompt cache repeated for its G
//               completions) out, never leaving the device
// Device tensors are freed by release(), not by the garbage collector, which cannot see GPU memory.
// On the CPU the same path runs with 'cpu' locations (tests use it: it is ORT's IO-binding run path, and a tensor
// released too early fails there as it would on a GPU, since release() disposes host tensors too).
import { Tensor } from 'onnxruntime-common';
import type { Device } from './device.ts';
import { GraphBuilder } from './graph-builder.ts';
import { OrtSession, int64Tensor, type SessionOptions } from './session.ts';

/** Where a kept output lives: on the GPU (WebGPU) or, on the CPU provider, in host memory. */
export type TensorLocation = 'cpu' | 'gpu-buffer';

/**
 * Whether a session on `device` keeps tensors on it between runs: WebGPU only. onnxruntime-node binds outputs to GPU
 * buffers only for WebGPU; CUDA's outputs always come back to the host.
 */
export const keepsTensorsOnDevice = (device: Device | undefined): boolean => device === 'webgpu';

/** The location of kept tensors on `device`. */
export const keptLocation = (device: Device | undefined): TensorLocation =>
  keepsTensorsOnDevice(device) ? 'gpu-buffer' : 'cpu';

const rank = (dims: readonly number[]): string[] => dims.map((_, i) => `d${i}`);

/** The small graphs that move tensors onto a device and between its buffers, one session per input signature. */
export class DeviceTensors {
  private readonly sessions = new Map<string, OrtSession>();

  constructor(
    /** Options of the sessions (device, threads), as the model's own. */
    private readonly session: Pick<SessionOptions, 'device' | 'threads' | 'spin'>,
    readonly location: TensorLocation,
  ) {}

  /**
   * Free tensors this path made (its outputs, or the decoder's bound outputs): a GPU buffer at once. Host tensors are
   * disposed too, so that one used after its release fails on the CPU as on a GPU ("Tensor.location is not supported").
   */
  release(tensors: Iterable<Tensor>): void {
    for (const t of new Set(tensors)) if (t.location !== 'none') t.dispose();
  }

  /** Host float32 tensors copied onto the device, in the same order. */
  upload(tensors: Tensor[]): Tensor[] {
    if (tensors.length === 0) return [];
    const key = `upload:${tensors.map((t) => t.dims.length).join(',')}`;
    const session = this.open(key, () => {
      const b = new GraphBuilder('metrl_upload');
      tensors.forEach((t, i) => {
        const x = b.input(
          `in_${i}`,
          'float32',
          rank(t.dims).map((d) => `${d}_${i}`),
        );
        b.op1('Identity', [x], {}, `out_${i}`);
        b.output(
          `out_${i}`,
          'float32',
          rank(t.dims).map((d) => `${d}_${i}`),
        );
      });
      return b;
    });
    const out = session.run(Object.fromEntries(tensors.map((t, i) => [`in_${i}`, t])));
    return tensors.map((_, i) => out[`out_${i}`]);
  }

  /** Each tensor's rows (axis 0) picked by `rows` ([B] indices into its first axis), on the device. */
  gatherRows(tensors: Tensor[], rows: number[]): Tensor[] {
    if (tensors.length === 0) return [];
    const key = `gather:${tensors.map((t) => t.dims.length).join(',')}`;
    const session = this.open(key, () => {
      const b = new GraphBuilder('metrl_gather_rows');
      const index = b.input('rows', 'int64', ['B']);
      tensors.forEach((t, i) => {
        const x = b.input(
          `in_${i}`,
          'float32',
          rank(t.dims).map((d) => `${d}_${i}`),
        );
        b.op1('Gather', [x, index], { axis: 0 }, `out_${i}`);
        b.output(`out_${i}`, 'float32', [
          'B',
          ...rank(t.dims)
            .slice(1)
            .map((d) => `${d}_${i}`),
        ]);
      });
      return b;
    });
    const out = session.run({
      rows: int64Tensor(rows, [rows.length]),
      ...Object.fromEntries(tensors.map((t, i) => [`in_${i}`, t])),
    });
    return tensors.map((_, i) => out[`out_${i}`]);
  }

  private open(key: string, build: () => GraphBuilder): OrtSession {
    let session = this.sessions.get(key);
    if (!session) {
      const graph = build();
      const outputs = Object.fromEntries(graph.outputNames().map((n) => [n, this.location]));
      session = new OrtSession(graph.toBytes(), { ...this.session, label: 'device copy', outputLocations: outputs });
      this.sessions.set(key, session);
    }
    return session;
  }

  dispose(): void {
    for (const s of this.sessions.values()) s.dispose();
    this.sessions.clear();
  }
}

/** A zero-filled host float32 tensor. */
export const zeros = (dims: number[]): Tensor =>
  new Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
