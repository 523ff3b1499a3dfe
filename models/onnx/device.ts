// Which device ONNX Runtime runs on (models/ layer, ONNX Runtime engine): `--device cpu | cuda | webgpu`, ORT's CPU,
// CUDA and WebGPU execution providers. A device that cannot run is found out before any work, by asking
// onnxruntime-node which providers its build has, whether the CUDA provider's libraries (which its install script
// downloads from NuGet, not bundled in the npm package) are present, and then by opening a one-node session on that
// provider in a child process: ORT and Dawn print their own diagnostics on stderr, which must not reach the user's
// terminal beside our one error line. The result is a UserError naming what is missing and how to get it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { GraphBuilder } from './graph-builder.ts';

export const DEVICES = ['cpu', 'cuda', 'webgpu'] as const;
export type Device = (typeof DEVICES)[number];

/** onnxruntime-node's name for each device's execution provider. */
const PROVIDER: Record<Device, string> = { cpu: 'cpu', cuda: 'cuda', webgpu: 'webgpu' };

/** The CUDA provider's shared libraries, which onnxruntime-node's install script puts beside its binding. */
const CUDA_LIBRARIES = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'];

const CUDA_HOW = 'install them with `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node` (downloads Microsoft.ML.OnnxRuntime.Gpu.Linux from NuGet; needs an NVIDIA GPU with CUDA 12 and cuDNN 9)';
const WEBGPU_HOW = 'it needs a GPU with Vulkan drivers (libvulkan1 and the vendor\'s driver; `vulkaninfo` should list the GPU)';

const require = createRequire(import.meta.url);

interface SupportedBackend {
  name: string;
  bundled: boolean;
}

/** The execution providers this onnxruntime-node build knows, and whether each ships in the npm package. */
export function supportedProviders(): SupportedBackend[] {
  const { binding, initOrt } = require('onnxruntime-node/dist/binding.js') as { binding: { listSupportedBackends(): SupportedBackend[] }; initOrt(): void };
  initOrt();
  return binding.listSupportedBackends();
}

/** The ORT session option for the device (none for the CPU, ORT's default). */
export function executionProviders(device: Device): { name: string }[] | undefined {
  return device === 'cpu' ? undefined : [{ name: PROVIDER[device] }];
}

/** A one-node graph (y = x) to open a session on a provider with. */
function probeModel(): Uint8Array {
  const b = new GraphBuilder('device-probe');
  const x = b.input('x', 'float32', [1]);
  b.op('Identity', [x], {}, ['y']);
  b.output('y', 'float32', [1]);
  return b.toBytes();
}

/**
 * Open a session on the device's provider in a child process (its stderr is kept from the user): null when it opens,
 * else ORT's reason and any Dawn / loader diagnostic printed on the way.
 */
function probe(device: Device): { reason: string; diagnostics: string } | null {
  const bindingPath = require.resolve('onnxruntime-node/dist/binding.js');
  const script = `
    const { binding, initOrt } = require(${JSON.stringify(bindingPath)});
    const bytes = require('node:fs').readFileSync(0);
    try {
      initOrt();
      const s = new binding.InferenceSession();
      s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, { executionProviders: [{ name: ${JSON.stringify(PROVIDER[device])} }], logSeverityLevel: 4 });
      s.dispose();
      process.stdout.write(JSON.stringify({ ok: true }));
    } catch (e) {
      process.stdout.write(JSON.stringify({ ok: false, reason: String(e && e.message || e) }));
    }`;
  const child = spawnSync(process.execPath, ['-e', script], { input: probeModel(), encoding: 'utf8', timeout: 60_000 });
  let result: { ok: boolean; reason?: string } | null = null;
  try {
    result = JSON.parse(child.stdout) as { ok: boolean; reason?: string };
  } catch {
    result = null;
  }
  if (result?.ok) return null;
  const diagnostics = child.stderr ?? '';
  const reason = result?.reason ?? (child.signal ? `the probe process died (${child.signal})` : `the probe process exited ${child.status}`);
  return { reason, diagnostics };
}

/** First line, control characters and ORT's source-path prefixes removed. */
function oneLine(text: string): string {
  const line = text.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
  return line.replace(/\x1b\[[0-9;]*m/g, '').replace(/^\/onnxruntime_src\/\S+ /, '').replace(/^.*?::<lambda\(\)> /, '').replace(/^.* was false\. /, '');
}

/**
 * Throw a UserError (one line: what is missing and how to get it) unless ONNX Runtime can run on `device` here. The
 * CPU always can.
 */
export function checkDevice(device: Device): void {
  if (device === 'cpu') return;
  const provider = supportedProviders().find((p) => p.name === PROVIDER[device]);
  if (!provider) {
    throw new UserError(`--device ${device}: this onnxruntime-node build has no ${device} execution provider (it has ${supportedProviders().map((p) => p.name).join(', ')})`);
  }
  if (device === 'cuda' && !provider.bundled) {
    const dir = dirname(require.resolve('onnxruntime-node/dist/binding.js'));
    const binDir = join(dir, '..', 'bin', 'napi-v6', process.platform, process.arch);
    const missing = CUDA_LIBRARIES.filter((f) => !existsSync(join(binDir, f)));
    if (missing.length > 0) throw new UserError(`--device cuda: onnxruntime-node's CUDA execution provider is not installed (${missing.join(', ')} missing); ${CUDA_HOW}`);
  }
  const failed = probe(device);
  if (!failed) return;
  const vulkan = /Couldn't load Vulkan: ([^\n]*)/.exec(failed.diagnostics)?.[1]?.trim();
  if (device === 'webgpu') {
    throw new UserError(`--device webgpu: ONNX Runtime's WebGPU execution provider found no GPU (${oneLine(failed.reason)}${vulkan ? `; ${vulkan}` : ''}); ${WEBGPU_HOW}`);
  }
  throw new UserError(`--device cuda: ONNX Runtime's CUDA execution provider cannot start (${oneLine(failed.reason)}); it needs an NVIDIA GPU with its driver, CUDA 12 and cuDNN 9 libraries on the library path`);
}
