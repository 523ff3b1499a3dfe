// Where --device cuda finds ONNX Runtime's CUDA provider and how it refuses a missing, incomplete or mismatched one
// (models/onnx/cuda-runtime.ts, device.ts, cuda-install.ts). No GPU and no download here: the folders are built from
// the project's own ORT library and provider files written by the test, whose only content that matters is the ORT
// release string each real library carries. The real 1.29.0 build (`metrl install-cuda`) was checked by hand: its
// binding runs every ORT graph on the CPU and its CUDA session fails on the missing libcublasLt.so.13.
import { describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findCudaRuntime } from '../../models/onnx/cuda-runtime.ts';
import { outOfMemoryError } from '../../models/onnx/device.ts';
import { ortVersionOf, projectBindingDir, projectOrtVersion } from '../../models/onnx/ort-binding.ts';
import { UserError } from '../../core/errors.ts';
import { expectUserError, metrl, scratchDir } from '../cli/helpers.ts';

/** A fake provider library: some bytes, ORT's release string between NULs as ORT compiles it, more bytes. */
function providerLibrary(path: string, release: string): void {
  writeFileSync(
    path,
    Buffer.concat([Buffer.alloc(1 << 20, 7), Buffer.from(`\0${release}\0`, 'latin1'), Buffer.alloc(4096, 0)]),
  );
}

/**
 * An install folder holding the project's binding and ORT library, and provider libraries of `release`. Linked, unless
 * ORT is to load from it: ORT looks for providers beside the real path of its library, so a loaded one is copied.
 */
function installFolder(name: string, release: string | null, copies = false): string {
  const dir = join(scratchDir('cuda-runtime'), name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['onnxruntime_binding.node', 'libonnxruntime.so.1'])
    (copies ? copyFileSync : symlinkSync)(join(projectBindingDir(), f), join(dir, f));
  if (release !== null) {
    writeFileSync(join(dir, 'libonnxruntime_providers_shared.so'), Buffer.alloc(1024, 1));
    providerLibrary(join(dir, 'libonnxruntime_providers_cuda.so'), release);
  }
  return dir;
}

function userError(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(UserError);
    return (error as Error).message;
  }
  throw new Error('expected a UserError');
}

function withCudaDir<T>(dir: string, f: () => T): T {
  const before = process.env.METRL_ORT_CUDA_DIR;
  process.env.METRL_ORT_CUDA_DIR = dir;
  try {
    return f();
  } finally {
    if (before === undefined) delete process.env.METRL_ORT_CUDA_DIR;
    else process.env.METRL_ORT_CUDA_DIR = before;
  }
}

describe('ORT release of a library', () => {
  it("reads the project ORT library's own release, and none from a file without one", () => {
    expect(ortVersionOf(join(projectBindingDir(), 'libonnxruntime.so.1'))).toBe(projectOrtVersion());
    const plain = join(scratchDir('cuda-runtime'), 'plain.so');
    writeFileSync(plain, Buffer.from('\0x1.2.3\0 version 1.29.0 in a sentence\0'));
    expect(ortVersionOf(plain)).toBeNull();
  });
});

describe('findCudaRuntime', () => {
  it('names the install command when no provider is anywhere', () => {
    const empty = join(scratchDir('cuda-runtime'), 'empty');
    expect(userError(() => withCudaDir(empty, findCudaRuntime))).toMatch(
      /^--device cuda: ONNX Runtime's CUDA execution provider is not installed \(not beside onnxruntime-node, and .*empty has none\); run `npx metrl install-cuda`/,
    );
  });

  it('names the missing files of an incomplete install', () => {
    const dir = installFolder('incomplete', null);
    expect(userError(() => withCudaDir(dir, findCudaRuntime))).toMatch(
      /the CUDA install in .*incomplete is incomplete \(libonnxruntime_providers_shared\.so, libonnxruntime_providers_cuda\.so missing\)/,
    );
  });

  it('refuses a provider of another ORT release than the library beside it', () => {
    const dir = installFolder('mismatched', '1.29.0');
    expect(userError(() => withCudaDir(dir, findCudaRuntime))).toMatch(
      new RegExp(
        `is built for ONNX Runtime 1\\.29\\.0, but the ONNX Runtime beside it is ${projectOrtVersion().replace(/\./g, '\\.')}; a provider runs only with the ONNX Runtime of its own release`,
      ),
    );
  });

  it('accepts a pair of one release', () => {
    const dir = installFolder('paired', projectOrtVersion());
    expect(withCudaDir(dir, findCudaRuntime)).toEqual({ dir, ort: projectOrtVersion(), source: 'metrl install-cuda' });
  });
});

describe('--device cuda and install-cuda on the command line', () => {
  const TINY = [
    '--domain',
    'shell',
    '--modality',
    'text',
    '--steps',
    '1',
    '--engine',
    'ort',
    '--device',
    'cuda',
    '--quiet',
  ];

  it('a mismatched provider is one line and exit 2, and no run folder is written', async () => {
    const run = join(scratchDir('cuda-runtime'), 'run-mismatched');
    expectUserError(
      await metrl(['train', ...TINY, '--out', run], {
        env: { METRL_ORT_CUDA_DIR: installFolder('cli-mismatched', '1.28.1') },
      }),
      /--device cuda: the CUDA provider in .* is built for ONNX Runtime 1\.28\.1/,
    );
    expect(existsSync(run)).toBe(false);
  }, 120_000);

  it('a paired provider that cannot load says why ORT could not load it, in one line', async () => {
    const run = join(scratchDir('cuda-runtime'), 'run-broken');
    // The fake provider is no ELF file: ORT's loader fails on it as it fails on a missing CUDA library.
    expectUserError(
      await metrl(['train', ...TINY, '--out', run], {
        env: { METRL_ORT_CUDA_DIR: installFolder('cli-broken', projectOrtVersion(), true) },
      }),
      /--device cuda: ONNX Runtime [\d.]+'s CUDA execution provider cannot start \(.*Failed to load shared library: .*cli-broken\/libonnxruntime_providers_\w+\.so: invalid ELF header\); it needs an NVIDIA GPU/,
    );
    expect(existsSync(run)).toBe(false);
  }, 120_000);

  it('install-cuda --from refuses a folder without the tarballs, and a tarball that is not the published one, leaving nothing', async () => {
    const target = join(scratchDir('cuda-runtime'), 'target');
    const from = join(scratchDir('cuda-runtime'), 'from');
    mkdirSync(from, { recursive: true });
    expectUserError(
      await metrl(['install-cuda', '--from', from, '--dir', target]),
      /install-cuda: --from .*from has no onnxruntime-node-1\.29\.0\.tgz \(get it with `npm pack onnxruntime-node@1\.29\.0`\)/,
    );
    writeFileSync(join(from, 'onnxruntime-node-1.29.0.tgz'), 'not the tarball');
    expectUserError(
      await metrl(['install-cuda', '--from', from, '--dir', target]),
      /install-cuda: .*onnxruntime-node-1\.29\.0\.tgz is not onnxruntime-node@1\.29\.0 as published \(sha512 differs\)/,
    );
    // The folder the install made is gone again.
    expect(existsSync(target)).toBe(false);
  }, 120_000);
});

describe('a device that cannot hold the model', () => {
  // ORT's own messages (its BFC arena, CUDA's and cuBLAS's status lines, C++'s bad_alloc).
  it('is one line naming what did not fit and what makes a step smaller', () => {
    const line = (message: string, device?: 'cuda' | 'cpu') =>
      outOfMemoryError(new Error(message), 'gemma3 training graph', device)?.message;
    expect(
      line(
        '/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:359 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*) Failed to allocate memory for requested buffer of size 8589934592\n',
        'cuda',
      ),
    ).toBe(
      "the gemma3 training graph does not fit in the cuda device's memory (Failed to allocate memory for requested buffer of size 8589934592): use a smaller model or fewer rows a step (--prompts-per-step, --group-size, --max-completion-tokens), or a device with more memory",
    );
    expect(
      line(
        'CUDA failure 2: out of memory ; GPU=0 ; hostname=h200 ; file=cuda_allocator.cc ; line=47 ; expr=cudaMalloc((void**)&p, size);',
        'cuda',
      ),
    ).toMatch(/^the gemma3 training graph does not fit in the cuda device's memory \(CUDA failure 2: out of memory\)/);
    expect(line('std::bad_alloc')).toMatch(/does not fit in this machine's memory \(std::bad_alloc\)/);
    expect(line('Non-zero status code returned while running MatMul node')).toBeUndefined();
  });
});
