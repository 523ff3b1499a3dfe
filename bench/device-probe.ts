// The device probe of `--device cuda|webgpu` (models/onnx/device.ts: a small attention graph run on the provider and
// checked against values computed here), for the GPU machine's log: which ONNX Runtime binding and providers this
// process has, `ldd` of the CUDA provider library (the CUDA, cuBLAS and cuDNN it resolves, or which are missing), the
// probe run at ORT's warning level with everything ORT and Dawn printed, and metrl's own verdict (its one-line error
// when the device cannot run). Exit 0 when the device runs, 2 when not.
//   node .dev/device-probe.mjs cuda|webgpu
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { checkDevice, DEVICES, probe, type Device } from '../models/onnx/device.ts';
import { bindingDir, bindingOrtVersion, nativeBinding } from '../models/onnx/ort-binding.ts';

const device = (process.argv[2] ?? 'cuda') as Device;
if (!DEVICES.includes(device) || device === 'cpu') throw new Error(`device-probe: cuda or webgpu, not ${device}`);
let verdict: string;
try {
  checkDevice(device); // under CUDA: finds the install and makes its binding this process's ORT
  verdict = 'runs';
} catch (error) {
  verdict = (error as Error).message;
}
console.log(`binding: ${bindingDir()} (ONNX Runtime ${bindingOrtVersion()})`);
console.log(
  `providers: ${nativeBinding()
    .listSupportedBackends()
    .map((p) => p.name)
    .join(', ')}`,
);
const provider = join(bindingDir(), 'libonnxruntime_providers_cuda.so');
if (device === 'cuda' && existsSync(provider)) {
  const ldd = spawnSync('ldd', [provider], { encoding: 'utf8', timeout: 30_000 });
  console.log(`ldd ${provider}:\n${ldd.stdout}${ldd.stderr}`);
}
const t0 = performance.now();
const verbose = probe(device, { logSeverity: 2, timeoutMs: 120_000 });
console.log(
  `probe at ORT's warning level (${((performance.now() - t0) / 1000).toFixed(1)} s): ${verbose.reason ?? 'ran, values right'}`,
);
console.log(`what ORT and Dawn printed:\n${verbose.diagnostics.trim() || '(nothing)'}`);
console.log(verdict === 'runs' ? `metrl: --device ${device} runs` : `metrl: error: ${verdict}`);
process.exitCode = verdict === 'runs' ? 0 : 2;
