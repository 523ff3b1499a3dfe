// Which device ONNX Runtime runs on: `--device cpu | cuda | webgpu`, ORT's CPU,
// CUDA and WebGPU execution providers. A device that cannot run is found out before any work: for CUDA, by finding
// the provider and checking that it pairs with the ORT that loads it (cuda-runtime.ts; that ORT then becomes this
// process's binding, ort-binding.ts); for both, by asking the binding which providers its build has and then by
// running a small attention graph on that provider in a child process (a provider that loads but cannot compute is
// refused too; its products and reductions load cuBLAS and cuDNN on CUDA): ORT and Dawn print their own diagnostics on
// stderr, which must not reach the user's terminal beside our one error line. The result is a UserError naming what is
// missing and how to get it.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { findCudaRuntime, type CudaRuntime } from './cuda-runtime.ts';
import { GraphBuilder } from './graph-builder.ts';
import { bindingDir, nativeBinding, useBindingDir } from './ort-binding.ts';

export const DEVICES = ['cpu', 'cuda', 'webgpu'] as const;
export type Device = (typeof DEVICES)[number];

/** onnxruntime-node's name for each device's execution provider. */
const PROVIDER: Record<Device, string> = { cpu: 'cpu', cuda: 'cuda', webgpu: 'webgpu' };

const WEBGPU_HOW =
  "it needs a GPU with Vulkan drivers (libvulkan1 and the vendor's driver; `vulkaninfo` should list the GPU)";

const require = createRequire(import.meta.url);

/** The execution providers the binding this process runs knows. */
function supportedProviders(): { name: string; bundled: boolean }[] {
  return nativeBinding().listSupportedBackends();
}

/** The ORT session option for the device (none for the CPU, ORT's default). */
export function executionProviders(device: Device): { name: string }[] | undefined {
  return device === 'cpu' ? undefined : [{ name: PROVIDER[device] }];
}

/**
 * A small attention over x [2, 3, 4] to run on a provider: y = mean over the last axis of softmax(x xᵀ) x, [2, 3].
 * Its products load cuBLAS on CUDA and its reductions and softmax cuDNN (which CUDA loads lazily, at the first node
 * that needs it), so a provider that opens but cannot compute is found here, not in the first real run.
 */
function probeModel(): Uint8Array {
  const b = new GraphBuilder('device-probe');
  const x = b.input('x', 'float32', [2, 3, 4]);
  const scores = b.op1('MatMul', [x, b.op1('Transpose', [x], { perm: [0, 2, 1] })]); // [2, 3, 3]
  const mixed = b.op1('MatMul', [b.op1('Softmax', [scores], { axis: -1 }), x]); // [2, 3, 4]
  b.op1('ReduceMean', [mixed], { axes: [-1], keepdims: 0 }, 'y');
  b.output('y', 'float32', [2, 3]);
  return b.toBytes();
}

/** The probe's input (x) and its output computed here in float64, for the child to compare with. */
function probeValues(): { x: number[]; y: number[] } {
  const x = Array.from({ length: 24 }, (_, i) => Math.sin(i + 1) / 2);
  const y: number[] = [];
  for (let n = 0; n < 2; n++)
    for (let i = 0; i < 3; i++) {
      const row = (r: number) => x.slice((n * 3 + r) * 4, (n * 3 + r) * 4 + 4);
      const s = [0, 1, 2].map((j) => row(i).reduce((a, v, k) => a + v * row(j)[k], 0));
      const e = s.map((v) => Math.exp(v - Math.max(...s)));
      const p = e.map((v) => v / e.reduce((a, b) => a + b, 0));
      let mean = 0;
      for (let k = 0; k < 4; k++) mean += p.reduce((a, pj, j) => a + pj * row(j)[k], 0) / 4;
      y.push(mean);
    }
  return { x, y };
}

/**
 * Open a session on the device's provider in a child process (its stderr is kept from the user) and run the probe
 * graph: the reason it failed (ORT's, or the wrong values; null when it gave the probe's values) and what ORT, Dawn
 * and the loaders printed on the way. `logSeverity` (ORT's, default 3: errors) is for the device check
 * (bench/device-probe.ts), which prints ORT's warnings.
 */
export function probe(
  device: Device,
  options: { logSeverity?: number; timeoutMs?: number } = {},
): { reason: string | null; diagnostics: string } {
  const binding = join(bindingDir(), 'onnxruntime_binding.node');
  const common = require.resolve('onnxruntime-common');
  const { x, y } = probeValues();
  const script = `
    const binding = require(${JSON.stringify(binding)});
    const { Tensor } = require(${JSON.stringify(common)});
    const bytes = require('node:fs').readFileSync(0);
    try {
      binding.initOrtOnce(${options.logSeverity ?? 3}, Tensor, true);
      const s = new binding.InferenceSession();
      s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, { executionProviders: [{ name: ${JSON.stringify(PROVIDER[device])} }], logSeverityLevel: ${options.logSeverity ?? 3} });
      const out = s.run({ x: new Tensor('float32', Float32Array.from(${JSON.stringify(x)}), [2, 3, 4]) }, { y: null }, {});
      const got = Array.from(out.y.data), want = ${JSON.stringify(y)};
      s.dispose();
      if (got.some((v, i) => !(Math.abs(v - want[i]) <= 1e-3 * (1 + Math.abs(want[i])))))
        throw new Error('a MatMul, Softmax and ReduceMean gave [' + got.map((v) => v.toPrecision(4)) + '] instead of [' + want.map((v) => v.toPrecision(4)) + ']');
      process.stdout.write(JSON.stringify({ ok: true }));
    } catch (e) {
      process.stdout.write(JSON.stringify({ ok: false, reason: String(e && e.message || e) }));
    }`;
  const child = spawnSync(process.execPath, ['-e', script], {
    input: probeModel(),
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 60_000,
  });
  let result: { ok: boolean; reason?: string } | null = null;
  try {
    result = JSON.parse(child.stdout) as { ok: boolean; reason?: string };
  } catch {
    result = null;
  }
  const diagnostics = child.stderr ?? '';
  if (result?.ok) return { reason: null, diagnostics };
  const reason =
    result?.reason ??
    (child.signal ? `the probe process died (${child.signal})` : `the probe process exited ${child.status}`);
  return { reason, diagnostics };
}

/** First line, control characters and ORT's source-path prefixes removed. */
function oneLine(text: string): string {
  const line =
    text
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '') ?? '';
  // ORT colours its log lines with ANSI escapes; the message is the text between them.
  return (
    line
      // biome-ignore lint/suspicious/noControlCharactersInRegex: an ANSI colour escape starts with ESC.
      .replace(/\x1b\[[0-9;]*m/g, '')
      .replace(/^\/onnxruntime_src\/\S+ /, '')
      .replace(/^.*?::<lambda\(\)> /, '')
      .replace(/^.* was false\. /, '')
  );
}

/**
 * Throw a UserError (one line: what is missing and how to get it) unless ONNX Runtime can run on `device` here. The
 * CPU always can. Under CUDA, the binding that holds the provider becomes this process's ORT (call this before any
 * session opens).
 */
export function checkDevice(device: Device): void {
  if (device === 'cpu') return;
  let cuda: CudaRuntime | null = null;
  if (device === 'cuda') {
    cuda = findCudaRuntime();
    useBindingDir(cuda.dir);
  }
  const providers = supportedProviders();
  if (!providers.some((p) => p.name === PROVIDER[device])) {
    throw new UserError(
      `--device ${device}: this onnxruntime-node build has no ${device} execution provider (it has ${providers.map((p) => p.name).join(', ')})`,
    );
  }
  const failed = probe(device);
  if (failed.reason === null) return;
  const vulkan = /Couldn't load Vulkan: ([^\n]*)/.exec(failed.diagnostics)?.[1]?.trim();
  if (device === 'webgpu') {
    throw new UserError(
      `--device webgpu: ONNX Runtime's WebGPU execution provider found no GPU (${oneLine(failed.reason!)}${vulkan ? `; ${vulkan}` : ''}); ${WEBGPU_HOW}`,
    );
  }
  const cudaMajor = cuda!.source === 'metrl install-cuda' ? '13' : '12';
  // ORT's own reason is "Failed to load shared library"; the library it could not find is on its error log.
  const library = /Failed to load library \S+ with error: ([^\n]*)/
    .exec(failed.diagnostics)?.[1]
    // biome-ignore lint/suspicious/noControlCharactersInRegex: an ANSI colour escape starts with ESC.
    ?.replace(/\x1b\[[0-9;]*m/g, '')
    .trim();
  throw new UserError(
    `--device cuda: ONNX Runtime ${cuda!.ort}'s CUDA execution provider cannot start (${oneLine(failed.reason!)}${library ? `: ${library}` : ''}); it needs an NVIDIA GPU with its driver, and the CUDA ${cudaMajor} and cuDNN 9 libraries on the library path (LD_LIBRARY_PATH)`,
  );
}

/** ORT's words when an allocation fails: its arena on any device, CUDA's and cuBLAS's status, C++'s bad_alloc. */
const OUT_OF_MEMORY =
  /Failed to allocate memory for requested buffer|Available memory of \d+ is smaller than requested|CUDA failure 2\b|out of memory|CUBLAS_STATUS_ALLOC_FAILED|(?:std::)?bad_alloc|bad allocation/i;

/**
 * A UserError (one line) when ORT's error says the device ran out of memory for `label`'s graph, else null: what did
 * not fit, and what makes a step smaller.
 */
export function outOfMemoryError(error: unknown, label: string, device: Device | undefined): UserError | null {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.split('\n').find((l) => OUT_OF_MEMORY.test(l));
  if (line === undefined) return null;
  // From ORT's words on (its source location and function signature before them say nothing to a user).
  const reason = line
    .slice(OUT_OF_MEMORY.exec(line)!.index)
    .replace(/ ; GPU=.*$/, '')
    .trim();
  const where = !device || device === 'cpu' ? "this machine's memory" : `the ${device} device's memory`;
  return new UserError(
    `the ${label} does not fit in ${where} (${reason}): use a smaller model or fewer rows a step (--prompts-per-step, --group-size, --max-completion-tokens), or a device with more memory`,
  );
}
