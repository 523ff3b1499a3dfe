// The onnxruntime-node native binding this process runs: the project's
// onnxruntime-node, or, under `--device cuda`, the ONNX Runtime build that `metrl install-cuda` put in its own folder
// (models/onnx/cuda-runtime.ts says which and why). One binding per process: both load a library named
// libonnxruntime.so.1, and a second binding would resolve to whichever loaded first, whatever its version. The choice
// reaches worker threads through the environment variable METRL_ORT_BINDING_DIR, which they inherit.
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { Tensor } from 'onnxruntime-common';

/** The native session object onnxruntime-node's binding exports (its dist/binding.d.ts). */
export interface NativeSession {
  loadModel(buffer: ArrayBuffer, byteOffset: number, byteLength: number, options: Record<string, unknown>): void;
  loadModel(path: string, options: Record<string, unknown>): void;
  readonly inputMetadata: { name: string }[];
  readonly outputMetadata: { name: string }[];
  run(
    feeds: Record<string, Tensor>,
    fetches: Record<string, null>,
    options: Record<string, unknown>,
  ): Record<string, Tensor>;
  endProfiling(): void;
  dispose(): void;
}

export interface NativeBinding {
  InferenceSession: new () => NativeSession;
  listSupportedBackends(): { name: string; bundled: boolean }[];
  initOrtOnce(logLevel: number, tensorConstructor: typeof Tensor, isMainThread: boolean): void;
}

/** The variable naming the folder of the binding to load instead of the project's (set by useBindingDir). */
export const BINDING_DIR_VARIABLE = 'METRL_ORT_BINDING_DIR';
const BINDING_FILE = 'onnxruntime_binding.node';

const require = createRequire(import.meta.url);

/** The folder of the project's onnxruntime-node binding and its ORT library (bin/napi-v6/<platform>/<arch>). */
export function projectBindingDir(): string {
  return join(
    dirname(require.resolve('onnxruntime-node/package.json')),
    'bin',
    'napi-v6',
    process.platform,
    process.arch,
  );
}

/** The project's onnxruntime-node version. */
export function projectOrtVersion(): string {
  return (require('onnxruntime-node/package.json') as { version: string }).version;
}

/**
 * The ORT release compiled into a library: the first printable run of the form 1.NN.N (two-digit minor) standing alone between
 * non-printable bytes (ORT's ORT_VERSION string; each library holds it once). Null when there is none.
 */
export function ortVersionOf(file: string): string | null {
  const fd = openSync(file, 'r');
  const chunk = Buffer.alloc(8 << 20);
  let carry = '';
  try {
    for (let position = 0; ; ) {
      const n = readSync(fd, chunk, 0, chunk.length, position);
      if (n === 0) return null;
      position += n;
      // Latin-1 keeps one character per byte; the 16 characters carried over catch a version split between chunks.
      const text = carry + chunk.toString('latin1', 0, n);
      const found = /(?<![\x20-\x7e])1\.\d{2}\.\d{1,2}(?![\x20-\x7e])/.exec(text);
      if (found) return found[0];
      carry = text.slice(-16);
    }
  } finally {
    closeSync(fd);
  }
}

/** The ORT release of the binding this process runs (or will run). */
export function bindingOrtVersion(): string {
  const dir = bindingDir();
  return dir === resolve(projectBindingDir())
    ? projectOrtVersion()
    : (ortVersionOf(join(dir, 'libonnxruntime.so.1')) ?? 'of unknown version');
}

let loaded: { dir: string; binding: NativeBinding } | null = null;

/** The folder whose binding this process runs (or will run, if none is loaded yet). */
export function bindingDir(): string {
  return resolve(process.env[BINDING_DIR_VARIABLE] || projectBindingDir());
}

/**
 * Run the binding in `dir` in this process and its future worker threads. Refused once another binding is loaded
 * (a bug: the device is chosen before any session opens).
 */
export function useBindingDir(dir: string): void {
  if (loaded && loaded.dir !== resolve(dir))
    throw new Error(`internal: ONNX Runtime from ${loaded.dir} is loaded already; cannot switch to ${dir}`);
  process.env[BINDING_DIR_VARIABLE] = resolve(dir);
}

/** The binding, loaded and initialised on first use (errors only on ORT's log: stderr is kept for metrl's line). */
export function nativeBinding(): NativeBinding {
  if (loaded) return loaded.binding;
  const dir = bindingDir();
  const binding = require(join(dir, BINDING_FILE)) as NativeBinding;
  // What onnxruntime-node's dist/binding.js initOrt does, at its default log level (warning); sessions set their own.
  binding.initOrtOnce(2, Tensor, isMainThread);
  loaded = { dir, binding };
  return binding;
}
