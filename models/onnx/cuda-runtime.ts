// Where `--device cuda` finds ONNX Runtime's CUDA execution provider, and the version check that pairs it with the ORT
// library that will load it. The provider is two shared libraries that ORT loads
// from its own folder and that must come from the same ORT release: a provider of another release is not refused by
// ORT, it crashes. Two places are looked at, in order:
//  1. beside the project's onnxruntime-node binding (where onnxruntime-node's own install script puts the NuGet CUDA 12
//     build when asked: `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node`);
//  2. the folder `metrl install-cuda` fills (METRL_ORT_CUDA_DIR, default ~/.cache/metrl/onnxruntime-cuda-1.29.0):
//     onnxruntime-node 1.29.0's binding and ORT library with Microsoft's ORT 1.29.0 CUDA 13 provider, which the npm
//     registry carries in com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9 (MIT). The project's onnxruntime-node
//     stays newer for the CPU, and CPU users never download the 290 MB.
// The release a library belongs to is read from the library itself: ORT compiles its version into each as a string.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { ortVersionOf, projectBindingDir, projectOrtVersion } from './ort-binding.ts';

/** The ORT release of the CUDA build `metrl install-cuda` installs, and what it downloads (npm tarballs, pinned). */
export const CUDA_BUILD = {
  ort: '1.29.0',
  cuda: '13',
  packages: [
    {
      spec: 'onnxruntime-node@1.29.0',
      tarball: 'onnxruntime-node-1.29.0.tgz',
      integrity: 'sha512-WjiVVB72riILz8HbYvxvmjKyE/WmkYoSfKY++axo5jAR609HQg8MwiG/HhShpTcJfmmAdzxxmB+MMST3A+SiPA==',
      megabytes: 112,
      files: {
        'package/bin/napi-v6/linux/x64/onnxruntime_binding.node': 'onnxruntime_binding.node',
        'package/bin/napi-v6/linux/x64/libonnxruntime.so.1': 'libonnxruntime.so.1',
      },
    },
    {
      spec: 'com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9',
      tarball: 'com.github.asus4.onnxruntime.linux-x64-gpu-0.4.9.tgz',
      integrity: 'sha512-FopIhNE/Ng+v2X65wVc9clPCBCvhvA53Hxo2U0Kf5fGdVsC7iCA+mZ0KLWggcQAj7TIZ6pNidR4AC10g74Xo6w==',
      megabytes: 179,
      files: {
        'package/Plugins/Linux/x64/libonnxruntime_providers_shared.so': 'libonnxruntime_providers_shared.so',
        'package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so': 'libonnxruntime_providers_cuda.so',
      },
    },
  ],
} as const;

/** The provider's libraries, loaded by ORT from the folder of its own library. */
const CUDA_PROVIDER_LIBRARIES = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'] as const;
const ORT_LIBRARY = 'libonnxruntime.so.1';

/** The folder `metrl install-cuda` fills: METRL_ORT_CUDA_DIR, else under XDG_CACHE_HOME (default ~/.cache). */
export function cudaInstallDir(): string {
  if (process.env.METRL_ORT_CUDA_DIR) return process.env.METRL_ORT_CUDA_DIR;
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'metrl', `onnxruntime-cuda-${CUDA_BUILD.ort}`);
}

const HOW = `run \`npx metrl install-cuda\` (downloads ONNX Runtime ${CUDA_BUILD.ort} and its CUDA ${CUDA_BUILD.cuda} provider from the npm registry, ${CUDA_BUILD.packages.reduce((s, p) => s + p.megabytes, 0)} MB, into ${cudaInstallDir()}; METRL_ORT_CUDA_DIR chooses another folder)`;

/** Where the CUDA provider was found: the folder of the binding to load and the ORT release it and the provider are. */
export interface CudaRuntime {
  dir: string;
  ort: string;
  source: 'onnxruntime-node' | 'metrl install-cuda';
}

/**
 * Check that the CUDA provider in `dir` belongs to `ort`'s release (its small bridge library, providers_shared, holds
 * no version); the UserError names both releases.
 */
function checkPairing(dir: string, ort: string, where: string): void {
  const library = join(dir, 'libonnxruntime_providers_cuda.so');
  const version = ortVersionOf(library);
  if (version !== ort) {
    throw new UserError(
      `--device cuda: the CUDA provider in ${where} (${library}) is built for ONNX Runtime ${version ?? 'of an unknown version'}, but the ONNX Runtime beside it is ${ort}; a provider runs only with the ONNX Runtime of its own release: ${HOW}`,
    );
  }
}

/**
 * Find the CUDA provider and check its release against the ORT that would load it; a UserError (one line: what is
 * missing or mismatched, and how to get the right one) otherwise.
 */
export function findCudaRuntime(): CudaRuntime {
  const project = projectBindingDir();
  if (CUDA_PROVIDER_LIBRARIES.every((f) => existsSync(join(project, f)))) {
    checkPairing(project, projectOrtVersion(), "onnxruntime-node's folder");
    return { dir: project, ort: projectOrtVersion(), source: 'onnxruntime-node' };
  }
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new UserError(
      `--device cuda: onnxruntime-node has no CUDA execution provider here, and \`metrl install-cuda\` installs one for Linux x64 only (this is ${process.platform} ${process.arch})`,
    );
  }
  const dir = cudaInstallDir();
  const needed = ['onnxruntime_binding.node', ORT_LIBRARY, ...CUDA_PROVIDER_LIBRARIES];
  const missing = needed.filter((f) => !existsSync(join(dir, f)));
  if (missing.length === needed.length)
    throw new UserError(
      `--device cuda: ONNX Runtime's CUDA execution provider is not installed (not beside onnxruntime-node, and ${dir} has none); ${HOW}`,
    );
  if (missing.length > 0)
    throw new UserError(
      `--device cuda: the CUDA install in ${dir} is incomplete (${missing.join(', ')} missing); ${HOW}`,
    );
  const ort = ortVersionOf(join(dir, ORT_LIBRARY));
  if (!ort)
    throw new UserError(
      `--device cuda: ${join(dir, ORT_LIBRARY)} is not an ONNX Runtime library (no version in it); ${HOW}`,
    );
  checkPairing(dir, ort, dir);
  return { dir, ort, source: 'metrl install-cuda' };
}
