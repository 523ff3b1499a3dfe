// `--backend webgpu` (models/webgpu.ts): the pieces that need no GPU (Dawn's diagnostics shortened to one clause, the
// messages for a missing package, a dawn.node that does not load and a missing adapter), and the real thing through
// the binary: on a machine where Dawn finds no adapter (this one: no GPU, no Vulkan loader) a forced webgpu backend is
// one line and exit status 2, with Dawn's own stderr kept out, and nothing written.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { adapterFailure, notInstalled, probeAdapter, resolveDawn, shortenDawnDiagnostics } from '../../models/webgpu.ts';
import { expectUserError, metrl, scratchDir } from '../cli/helpers.ts';

// What dawn.node (webgpu 0.6.2) prints on stderr when libvulkan.so.1 is absent, as captured on this machine.
const NO_VULKAN =
  "Warning: Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file: No such file or directory\n" +
  '    at operator() (/home/runner/work/node-webgpu/node-webgpu/third_party/dawn/src/dawn/native/vulkan/BackendVk.cpp:368)\n';

describe('Dawn diagnostics in one clause', () => {
  it('keeps the message, drops the source location and the Warning: prefix', () => {
    expect(shortenDawnDiagnostics(NO_VULKAN)).toBe("Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file: No such file or directory");
  });

  it('says a repeated line once, joins distinct ones, strips colour codes and caps the length', () => {
    expect(shortenDawnDiagnostics(NO_VULKAN + NO_VULKAN + '\x1b[31mError: no adapter\x1b[0m\n')).toBe(
      "Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file: No such file or directory; no adapter",
    );
    const long = shortenDawnDiagnostics('x'.repeat(500), 40);
    expect(long).toHaveLength(40);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('webgpu failure messages', () => {
  it('names the missing package and how to install it', () => {
    expect(resolveDawn('metrl-no-such-package-webgpu')).toBeNull();
    expect(notInstalled().message).toBe(
      "--backend webgpu: the `webgpu` package is not installed; install it with `npm install webgpu` (Dawn's Node bindings, prebuilt for linux-x64/arm64, macOS and Windows)",
    );
  });

  it('a missing adapter gives Dawn\'s reason, or the bare fact when Dawn said nothing', () => {
    expect(adapterFailure({ ok: false, stage: 'adapter', reason: 'requestAdapter() returned null', diagnostics: NO_VULKAN }).message).toMatch(
      /^--backend webgpu: Dawn found no GPU adapter \(Couldn't load Vulkan: libvulkan\.so\.1: cannot open shared object file: No such file or directory\); it needs a GPU with Vulkan drivers on Linux/,
    );
    expect(adapterFailure({ ok: false, stage: 'adapter', reason: 'requestAdapter() returned null', diagnostics: '' }).message).toMatch(
      /^--backend webgpu: Dawn found no GPU adapter \(requestAdapter\(\) returned null\); /,
    );
  });

  it('a dawn.node that does not load is told apart from a missing adapter', () => {
    const e = adapterFailure({ ok: false, stage: 'load', reason: 'Error: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38\' not found\n  at Module._extensions', diagnostics: '' });
    expect(e.message).toMatch(/^--backend webgpu: the `webgpu` package is installed but its dawn\.node does not load \(\/lib\/x86_64-linux-gnu\/libc\.so\.6: version `GLIBC_2\.38' not found\); /);
    expect(e.message).not.toContain('\n');
  });
});

describe('metrl … --backend webgpu on this machine', () => {
  const entry = resolveDawn();
  const probe = entry ? probeAdapter(entry) : null;

  it.skipIf(probe?.ok === true)('is one line naming what is missing, exit 2, and writes nothing', async () => {
    const out = join(scratchDir('webgpu'), 'base');
    const result = await metrl(['pretrain', '--out', out, '--backend', 'webgpu', '--steps', '1']);
    if (!entry) expectUserError(result, /--backend webgpu: the `webgpu` package is not installed; install it with `npm install webgpu`/);
    else if (probe && !probe.ok && probe.stage === 'load') expectUserError(result, /--backend webgpu: the `webgpu` package is installed but its dawn\.node does not load \(.+\); /);
    else expectUserError(result, /^metrl: error: --backend webgpu: Dawn found no GPU adapter \(.+\); it needs a GPU with Vulkan drivers on Linux/);
    expect(result.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  }, 120_000);

  it('an unknown --backend lists webgpu among the choices', async () => {
    const result = await metrl(['pretrain', '--out', join(scratchDir('webgpu'), 'base'), '--backend', 'metal']);
    expectUserError(result, /^metrl: error: --backend: unknown backend 'metal' \(choose from node-gpu, node, webgpu, wasm, cpu\)$/);
  }, 120_000);
});
