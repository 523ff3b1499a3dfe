// tfjs backend choice: the fastest that loads, in the order tfjs-node-gpu (CUDA), tfjs-node (native TensorFlow on the
// CPU), the WASM backend (SIMD), then tfjs's pure-JS cpu backend. The two native packages are optional dependencies:
// `npm ci` succeeds without them and their import failing here just moves on to the next. `--backend NAME` forces one
// (and fails with one line if it cannot load). Callers print and record the returned name.
// No WebGPU backend: tfjs's (@tensorflow/tfjs-backend-webgpu on Dawn's Node bindings) was run on an NVIDIA H200
// (2026-11-26): the adapter opens, then the first synchronous read (dataSync, which metrl's tfjs code uses throughout)
// fails, because that backend reads GPU buffers synchronously by drawing them into an OffscreenCanvas, which Node does
// not have. `--backend webgpu` therefore says so in one line and points to ONNX Runtime's WebGPU provider
// (`--device webgpu`, models/onnx/device.ts), which ran there and agrees with the CPU.
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../core/errors.ts';
import { shareIdentityOnWasm } from './ops.ts';

/** The backends, in the order tried without `--backend`. */
export const BACKEND_NAMES = ['node-gpu', 'node', 'wasm', 'cpu'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** Why `--backend webgpu` is refused (see the header), and the GPU path to use instead. */
export const NO_WEBGPU_BACKEND =
  "--backend webgpu: tfjs's WebGPU backend cannot run in Node (it reads GPU results synchronously through OffscreenCanvas, which Node lacks); for a GPU use ONNX Runtime's WebGPU provider: --device webgpu (the built-in model, or a Hugging Face checkpoint with --engine ort)";

export interface BackendChoice {
  name: BackendName;
  /** tfjs's own name for the active backend ('tensorflow', 'wasm', 'cpu'). */
  tfBackend: string;
  /** Why earlier candidates were skipped, one short line each (for --verbose output and logs). */
  skipped: string[];
}

let current: BackendChoice | null = null;

/** Import a package by a computed name, so the type checker and bundlers do not require it to be installed. */
async function importOptional(name: string): Promise<unknown> {
  return import(name);
}

/** Load and activate one backend now (no fallback, no memory of the choice): for benchmarks that compare backends. */
export async function activateBackend(name: BackendName): Promise<void> {
  switch (name) {
    case 'node-gpu':
      await importOptional('@tensorflow/tfjs-node-gpu');
      break;
    case 'node':
      await importOptional('@tensorflow/tfjs-node');
      break;
    case 'wasm':
      await import('@tensorflow/tfjs-backend-wasm');
      shareIdentityOnWasm();
      break;
    case 'cpu':
      break;
  }
  const tfName = name === 'node' || name === 'node-gpu' ? 'tensorflow' : name;
  if (!(await tf.setBackend(tfName))) throw new Error(`tfjs could not initialise the ${tfName} backend`);
  await tf.ready();
}

function shortReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0].slice(0, 160);
}

/** "tfjs backend: wasm (skipped node-gpu, node)": the line commands print once their model has loaded. */
export function backendLine(choice: BackendChoice): string {
  return `tfjs backend: ${choice.name}${choice.skipped.length ? ` (skipped ${choice.skipped.map((s) => s.split(':')[0]).join(', ')})` : ''}`;
}

/**
 * Select the backend (once per process; later calls return the first choice). `requested` forces one name.
 * `log` receives the "tfjs backend: …" line (stderr by default; pass null for silence).
 */
export async function initBackend(
  requested?: string,
  log: ((line: string) => void) | null = (l) => process.stderr.write(l + '\n'),
): Promise<BackendChoice> {
  if (requested === 'webgpu') throw new UserError(NO_WEBGPU_BACKEND);
  if (requested !== undefined && !(BACKEND_NAMES as readonly string[]).includes(requested)) {
    throw new UserError(`--backend: unknown backend '${requested}' (choose from ${BACKEND_NAMES.join(', ')})`);
  }
  if (current) {
    if (requested && requested !== current.name)
      throw new UserError(`--backend ${requested}: the ${current.name} backend is already active in this process`);
    return current;
  }
  const candidates: BackendName[] = requested ? [requested as BackendName] : [...BACKEND_NAMES];
  const skipped: string[] = [];
  for (const name of candidates) {
    try {
      await activateBackend(name);
      current = { name, tfBackend: tf.getBackend(), skipped };
      log?.(backendLine(current));
      return current;
    } catch (error) {
      if (requested && error instanceof UserError) throw error; // already one line naming what is missing
      if (requested) throw new UserError(`--backend ${name}: cannot load it (${shortReason(error)})`);
      skipped.push(`${name}: ${shortReason(error)}`);
    }
  }
  throw new UserError(`no tfjs backend could be loaded: ${skipped.join('; ')}`);
}

/** The backend chosen so far, or null before initBackend. */
export function currentBackend(): BackendChoice | null {
  return current;
}
