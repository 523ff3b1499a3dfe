// An ONNX Runtime session opened from the bytes of a ModelProto, run
// synchronously. The Sampler contract (models/sampler.ts) is synchronous and a decode is hundreds of small runs, so
// this goes under onnxruntime-node's promise wrapper (whose run only defers the same native, synchronous call with
// setImmediate) to the binding it wraps. Threads: ORT's intra-op pool, `threads` of them (by default the cores Node
// reports, given to ORT explicitly: ORT's own default counts physical cores its own way, and on some virtual machines
// it counts fewer than there are; 1 for a single-core comparison). A model ORT refuses (an unknown operator, bad
// weights) is a UserError naming what failed. A model whose weights live in a shared weight file (weight-file.ts) is opened from that file's
// folder. A model too large for one protobuf comes with external weights (graph-builder.ts toModel): both
// are written to a temporary folder, opened from there, and the folder removed once ORT has read them.
// METRL_ORT_PLACEMENT=DIR (a diagnostic, session-placement.ts reads it): every session logs ORT's verbose session log
// (which provider each node was placed on) to stderr after a line naming it, and writes the graph ORT optimized to
// DIR/<pid>-<thread>-<n>.onnx.
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { Tensor } from 'onnxruntime-common';
import { systemErrorAsUserError, UserError } from '../../core/errors.ts';
import { executionProviders, outOfMemoryError, type Device } from './device.ts';
import { EXTERNAL_FILE, type SerializedModel } from './graph-builder.ts';
import { nativeBinding, type NativeSession } from './ort-binding.ts';

export interface SessionOptions {
  /** ORT intra-op threads (default: every core this process may use, os.availableParallelism()). */
  threads?: number;
  /** What the model is, for error messages. */
  label?: string;
  /**
   * Let idle pool threads spin for work (ORT's own default; env METRL_ORT_SPIN=1). Off by default here: on a machine
   * shared with other jobs spinning threads lose whole time slices, as PyTorch's OpenMP threads do
   * (docs/performance.md has the measurement).
   */
  spin?: boolean;
  /** Execution provider (default the CPU); check it first with checkDevice (models/onnx/device.ts). */
  device?: Device;
  /**
   * Prepacking constant weights into each product's own layout (default on). Off, every product reads the one copy of
   * a weight: the HF learner's weights are read by a forward MatMul and a backward Gemm, each of which would keep a
   * packed copy; its products have hundreds of rows, where unpacked weights cost little.
   */
  prepack?: boolean;
  /**
   * Outputs bound to a location by ORT's IO binding (device-tensors.ts): 'gpu-buffer' keeps an output on the WebGPU
   * device for the next run to take; unnamed outputs come to the host. Set, every run fetches all outputs (the
   * binding pairs locations with outputs by position).
   */
  outputLocations?: Record<string, 'cpu' | 'gpu-buffer'>;
  /**
   * The graph holds 16-bit weights that must stay 16-bit (weight-dtype.ts). ORT's default optimizations fold a Cast of
   * an initializer into a float32 initializer (ConstantFolding, FuseFp16InitializerToFp32NodeTransformer), on every
   * provider, which would double the weights' memory; those two are switched off for such a graph.
   */
  sixteenBit?: boolean;
}

/** The optimizers that turn a 16-bit initializer and its Cast into a float32 initializer (ORT's names, `;`-separated). */
const KEEP_16_BIT = 'ConstantFolding;FuseFp16InitializerToFp32NodeTransformer';
/** The diagnostic variable: a folder for the optimized graphs; sessions then log their placement (see the header). */
export const PLACEMENT_VARIABLE = 'METRL_ORT_PLACEMENT';
/** The line a session writes to stderr before its placement log when PLACEMENT_VARIABLE is set. */
export const PLACEMENT_MARKER = 'metrl-ort-session';
let placementSessions = 0;

export type Feeds = Record<string, Tensor>;

export class OrtSession {
  private readonly native: NativeSession;
  private readonly label: string;
  private readonly device: Device | undefined;
  private readonly bound: boolean;
  readonly inputNames: string[];
  readonly outputNames: string[];

  constructor(model: Uint8Array | SerializedModel, options: SessionOptions = {}) {
    this.label = options.label ?? 'model';
    this.device = options.device;
    this.bound = options.outputLocations !== undefined;
    this.native = new (nativeBinding().InferenceSession)();
    const placement = process.env[PLACEMENT_VARIABLE];
    // Named by process, thread and order: worker threads open sessions of their own.
    const optimized = placement ? join(placement, `${process.pid}-${threadId}-${placementSessions++}.onnx`) : null;
    const sessionOptions: Record<string, unknown> = {
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
      // Errors only: ORT's warnings are notes on its own optimiser's choices (an If branch's inputs it could not
      // rename, say), not something the user can act on, and stderr is kept for metrl's one error line.
      logSeverityLevel: optimized ? 0 : 3,
      ...(optimized ? { logVerbosityLevel: 0, optimizedModelFilePath: optimized } : {}),
      interOpNumThreads: 1,
      intraOpNumThreads: options.threads ?? availableParallelism(),
      ...(options.device && options.device !== 'cpu' ? { executionProviders: executionProviders(options.device) } : {}),
      ...(options.outputLocations ? { preferredOutputLocation: options.outputLocations } : {}),
      ...(process.env.METRL_ORT_PROFILE
        ? { enableProfiling: true, profileFilePrefix: process.env.METRL_ORT_PROFILE }
        : {}),
      extra: {
        session: {
          ...((options.spin ?? process.env.METRL_ORT_SPIN === '1')
            ? {}
            : { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } }),
          ...(options.prepack === false ? { disable_prepacking: '1' } : {}),
        },
        ...(options.sixteenBit ? { optimization: { disable_specified_optimizers: KEEP_16_BIT } } : {}),
      },
    };
    if (optimized) process.stderr.write(`${PLACEMENT_MARKER} ${optimized} ${this.label}\n`);
    const serialized = model instanceof Uint8Array ? { model, external: null } : model;
    const folder = serialized.external ? writeWithExternalWeights(serialized, options.label ?? 'model') : null;
    // A model over a shared weight file is read from that file's folder (ORT takes external data only beside the
    // model) and removed once read; the weights stay, mapped.
    const sharedModel = serialized.shared ? serialized.shared.modelPath() : null;
    try {
      if (sharedModel) writeFileSync(sharedModel, serialized.model);
      if (folder) this.native.loadModel(join(folder, 'model.onnx'), sessionOptions);
      else if (sharedModel) this.native.loadModel(sharedModel, sessionOptions);
      else
        this.native.loadModel(
          serialized.model.buffer as ArrayBuffer,
          serialized.model.byteOffset,
          serialized.model.byteLength,
          sessionOptions,
        );
    } catch (error) {
      const system = systemErrorAsUserError(error);
      if (system instanceof UserError) throw system;
      throw (
        outOfMemoryError(error, `${options.label ?? 'model'} graph`, options.device) ??
        new UserError(
          `ONNX Runtime cannot build the ${options.label ?? 'model'} graph: ${(error as Error).message.split('\n')[0]}`,
        )
      );
    } finally {
      if (folder) rmSync(folder, { recursive: true, force: true });
      if (sharedModel) rmSync(sharedModel, { force: true });
    }
    this.inputNames = this.native.inputMetadata.map((m) => m.name);
    this.outputNames = this.native.outputMetadata.map((m) => m.name);
  }

  /** Run the graph; returns the named outputs (all of them unless `outputs` lists some). */
  run(feeds: Feeds, outputs: string[] = this.outputNames): Record<string, Tensor> {
    const fetches = Object.fromEntries((this.bound ? this.outputNames : outputs).map((n) => [n, null]));
    try {
      const all = this.native.run(feeds, fetches, {});
      if (!this.bound || outputs === this.outputNames) return all;
      // Outputs fetched only for the binding's sake: a device buffer is freed now, not when the collector runs.
      for (const n of this.outputNames) if (!outputs.includes(n) && all[n].location === 'gpu-buffer') all[n].dispose();
      return Object.fromEntries(outputs.map((n) => [n, all[n]]));
    } catch (error) {
      throw outOfMemoryError(error, `${this.label} graph`, this.device) ?? error;
    }
  }

  dispose(): void {
    if (process.env.METRL_ORT_PROFILE) this.native.endProfiling();
    this.native.dispose();
  }
}

/** A model and its external weights written to a fresh temporary folder (model.onnx, EXTERNAL_FILE); returns the folder. */
function writeWithExternalWeights(serialized: SerializedModel, label: string): string {
  const folder = mkdtempSync(join(tmpdir(), 'metrl-onnx-'));
  try {
    writeFileSync(join(folder, 'model.onnx'), serialized.model);
    const fd = openSync(join(folder, EXTERNAL_FILE), 'w');
    try {
      for (const { offset, bytes } of serialized.external!.pieces) {
        for (let done = 0; done < bytes.byteLength; )
          done += writeSync(fd, bytes, done, bytes.byteLength - done, offset + done);
      }
    } finally {
      closeSync(fd);
    }
    return folder;
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw systemErrorAsUserError(
      error,
      folder,
      `cannot write the ${label} graph's weights (${(serialized.external!.length / 2 ** 30).toFixed(1)} GiB)`,
    );
  }
}

export const floatTensor = (data: Float32Array, dims: number[]): Tensor => new Tensor('float32', data, dims);
export const int64Tensor = (data: ArrayLike<number>, dims: number[]): Tensor =>
  new Tensor('int64', BigInt64Array.from(Array.from(data, (v) => BigInt(v))), dims);
