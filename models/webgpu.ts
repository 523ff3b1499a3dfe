// The tfjs WebGPU backend in Node (models/ layer, `--backend webgpu`). @tensorflow/tfjs-backend-webgpu expects a
// browser's navigator.gpu and GPU* globals; Dawn's Node bindings (the optional `webgpu` package: `create(flags)`
// returns a GPU object, `globals` holds GPUBufferUsage & co.) provide them. Whether Dawn finds a GPU adapter is asked
// first in a child process: Dawn prints its diagnostics ("Warning: Couldn't load Vulkan: …" and a C++ source line) on
// stderr from native code, which must not reach the user's terminal beside our one error line. What cannot run is a
// UserError naming what is missing and how to get it.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { UserError } from '../core/errors.ts';

/** Dawn's Node bindings on npm (an optional dependency: a platform without its prebuilt dawn.node still installs). */
export const DAWN_PACKAGE = 'webgpu';

const INSTALL_HOW = "install it with `npm install webgpu` (Dawn's Node bindings, prebuilt for linux-x64/arm64, macOS and Windows)";
const GPU_HOW = "it needs a GPU with Vulkan drivers on Linux (libvulkan1 and the vendor's driver; `vulkaninfo` should list the GPU), Metal on macOS or D3D12 on Windows";

export type AdapterProbe =
  | { ok: true; adapter: string }
  | { ok: false; stage: 'load' | 'adapter'; reason: string; diagnostics: string };

const require = createRequire(import.meta.url);

/** The entry file of the Dawn package, or null when it is not installed. */
export function resolveDawn(packageName: string = DAWN_PACKAGE): string | null {
  try {
    return require.resolve(packageName);
  } catch {
    return null;
  }
}

/**
 * Dawn's stderr diagnostics in one short clause: the message lines without their C++ source locations ("at operator()
 * (…/BackendVk.cpp:368)") or "Warning:"/"Error:" prefixes, repeated lines once, at most `max` characters.
 */
export function shortenDawnDiagnostics(text: string, max = 160): string {
  const lines = text
    .split('\n')
    .map((l) => l.replace(/\x1b\[[0-9;]*m/g, '').trim())
    .filter((l) => l !== '' && !/^at /.test(l))
    .map((l) => l.replace(/^(Warning|Error|Info):\s*/i, ''));
  const joined = [...new Set(lines)].join('; ');
  return joined.length > max ? joined.slice(0, max - 1) + '…' : joined;
}

/**
 * Ask Dawn for a high-performance adapter in a child process (its stderr kept from the user). `entry` is the Dawn
 * package's entry file (resolveDawn()).
 */
export function probeAdapter(entry: string): AdapterProbe {
  const script = `
    const { writeSync } = await import('node:fs');
    const out = (o) => writeSync(1, JSON.stringify(o));
    try {
      const { create } = await import(${JSON.stringify(pathToFileURL(entry).href)});
      const gpu = create([]);
      const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
      if (!adapter) out({ ok: false, stage: 'adapter', reason: 'requestAdapter() returned null' });
      else {
        const i = adapter.info ?? {};
        out({ ok: true, adapter: [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' ') || 'unnamed adapter' });
      }
    } catch (e) {
      out({ ok: false, stage: 'load', reason: String((e && e.message) || e) });
    }
    process.exit(0);`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  const diagnostics = child.stderr ?? '';
  try {
    const result = JSON.parse(child.stdout) as { ok: boolean; stage?: 'load' | 'adapter'; reason?: string; adapter?: string };
    if (result.ok) return { ok: true, adapter: result.adapter ?? 'unnamed adapter' };
    return { ok: false, stage: result.stage ?? 'adapter', reason: result.reason ?? 'unknown', diagnostics };
  } catch {
    const reason = child.signal ? `the probe process died (${child.signal})` : `the probe process exited ${child.status}`;
    return { ok: false, stage: 'load', reason, diagnostics };
  }
}

/** The one-line error for a failed probe (what is missing, Dawn's reason shortened, how to get it). */
export function adapterFailure(probe: Exclude<AdapterProbe, { ok: true }>): UserError {
  if (probe.stage === 'load') {
    const why = shortenDawnDiagnostics(probe.reason.split('\n')[0]);
    return new UserError(`--backend webgpu: the \`webgpu\` package is installed but its dawn.node does not load (${why}); reinstall it on a supported platform (linux-x64/arm64, macOS, Windows)`);
  }
  const dawn = shortenDawnDiagnostics(probe.diagnostics);
  return new UserError(`--backend webgpu: Dawn found no GPU adapter (${dawn || probe.reason}); ${GPU_HOW}`);
}

/** The error for a Dawn package that is not installed. */
export function notInstalled(): UserError {
  return new UserError(`--backend webgpu: the \`webgpu\` package is not installed; ${INSTALL_HOW}`);
}

/** Import a package by a computed name, so the type checker does not require the optional one to be installed. */
async function importOptional(name: string): Promise<unknown> {
  return import(name);
}

/**
 * Make the tfjs WebGPU backend available in this process: check there is an adapter (else a UserError), install
 * navigator.gpu and the GPU* globals from Dawn, then import @tensorflow/tfjs-backend-webgpu, which registers its backend
 * only if navigator.gpu exists when it is first imported. Returns the adapter's description.
 */
export async function installWebGpu(): Promise<string> {
  const entry = resolveDawn();
  if (!entry) throw notInstalled();
  const probe = probeAdapter(entry);
  if (!probe.ok) throw adapterFailure(probe);
  const dawn = (await importOptional(DAWN_PACKAGE)) as { create(flags: string[]): unknown; globals: Record<string, unknown> };
  Object.assign(globalThis, dawn.globals);
  const gpu = dawn.create([]);
  // Node 20 has no global navigator; Node 21+ has one without `gpu`.
  const g = globalThis as { navigator?: object };
  if (g.navigator) Object.defineProperty(g.navigator, 'gpu', { value: gpu, configurable: true });
  else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  await import('@tensorflow/tfjs-backend-webgpu');
  return probe.adapter;
}
