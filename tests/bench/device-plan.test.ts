// The device check (bench/device-run.sh) fits what the `device` tool lends: each call carries the checkout's tracked
// tree (and untracked files git does not ignore) plus its carry, 64 MiB in all, runs at most 600 s, and the whole check
// must stay under about 12 minutes of device time with the machine's start. So: the WebGPU call's bundle is built here
// (bench/device-bundle.sh, into a temporary folder) and measured with the tree; the CUDA build's parts are at most
// 35 MiB each (bench/device-cuda-parts.sh splits at that size), and their number comes from the parts in .devcuda/
// where they were built, else from the compressed build's size measured when the split was set; each call's time is
// the sum of its steps' limits as device-run.sh declares them (`step SECONDS NAME …`). Needs Debian's packages for
// the bundle's Vulkan loader (CI has them).
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../core/paths.ts';

const MiB = 2 ** 20;
/** What one call carries, tree included. */
const CALL_BYTES = 64 * MiB;
/** Room kept under it: the tree grows with every commit between this test and the GPU run. */
const MARGIN_BYTES = 1 * MiB;
/** One call's steps: well under the 600 s a call may run. */
const CALL_SECONDS = 480;
/** The whole check with the machine's start (2 minutes) and a transfer allowance per call. */
const CHECK_SECONDS = 12 * 60;
const START_SECONDS = 120;
const TRANSFER_SECONDS_PER_CALL = 10;
/** split -b of bench/device-cuda-parts.sh. */
const PART_BYTES = 35 * MiB;
/**
 * The CUDA build (ORT 1.29.0's binding, library and CUDA 13 provider, `metrl install-cuda`'s four files) as xz -9e
 * makes it: 176,447,440 bytes, five parts (bench/device-cuda-parts.sh, 2026-12-01, on the 2-core development machine).
 */
const CUDA_XZ_BYTES = 176_447_440;

/** Bytes the `device` tool carries of the checkout itself: tracked files and untracked ones git does not ignore. */
function treeBytes(): number {
  const list = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  return list
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(PROJECT_ROOT, f)))
    .reduce((sum, f) => sum + statSync(join(PROJECT_ROOT, f)).size, 0);
}

const folderBytes = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (sum, e) => sum + (e.isDirectory() ? folderBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size),
    0,
  );

/** Each phase's step limits, as `step SECONDS NAME` lines of bench/device-run.sh declare them. */
function phaseSeconds(): Record<string, number[]> {
  const script = readFileSync(join(PROJECT_ROOT, 'bench', 'device-run.sh'), 'utf8');
  const phases: Record<string, number[]> = {};
  let phase: string | null = null;
  for (const line of script.split('\n')) {
    const start = /^ {2}(\w+)\)$/.exec(line);
    if (start) phase = start[1];
    const step = /^\s+step (\d+) [\w-]+ /.exec(line);
    if (step && phase) (phases[phase] ??= []).push(Number(step[1]));
  }
  return phases;
}

/** The CUDA build's parts: those built in .devcuda/, else as many as its measured size needs. */
function cudaParts(): number[] {
  const dir = join(PROJECT_ROOT, '.devcuda');
  const built = existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('part-')) : [];
  if (built.length > 0) return built.sort().map((f) => statSync(join(dir, f)).size);
  const n = Math.ceil(CUDA_XZ_BYTES / PART_BYTES);
  return Array.from({ length: n }, (_, i) => (i < n - 1 ? PART_BYTES : CUDA_XZ_BYTES - (n - 1) * PART_BYTES));
}

describe('the device check fits the device tool', () => {
  const tree = treeBytes();
  const phases = phaseSeconds();

  it('declares its three phases, each with time limits on its steps', () => {
    expect(Object.keys(phases).sort()).toEqual(['cuda', 'stage', 'webgpu']);
    for (const [phase, limits] of Object.entries(phases)) expect(limits.length, phase).toBeGreaterThan(0);
  });

  it('carries under 64 MiB a call: the WebGPU bundle (built here) and each CUDA part, with the tree', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'metrl-device-plan-')), '.dev');
    try {
      execFileSync('bash', ['bench/device-bundle.sh'], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, DEVICE_BUNDLE_DIR: dir },
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 900_000,
      });
      const bundle = folderBytes(dir);
      const calls = { webgpu: bundle, ...Object.fromEntries(cudaParts().map((b, i) => [`cuda part ${i + 1}`, b])) };
      for (const [call, bytes] of Object.entries(calls))
        expect(tree + bytes, `${call}: ${((tree + bytes) / MiB).toFixed(1)} MiB with the tree`).toBeLessThanOrEqual(
          CALL_BYTES - MARGIN_BYTES,
        );
    } finally {
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
  }, 900_000);

  it('keeps each call well under 600 s, and the whole check with the start under 12 minutes', () => {
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const parts = cudaParts().length;
    // webgpu, one stage call per part but the last, cuda (which carries the last).
    const calls = [sum(phases.webgpu), ...Array(parts - 1).fill(sum(phases.stage)), sum(phases.cuda)];
    for (const seconds of calls) expect(seconds).toBeLessThanOrEqual(CALL_SECONDS);
    const total = START_SECONDS + sum(calls) + calls.length * TRANSFER_SECONDS_PER_CALL;
    expect(total, `${calls.length} calls`).toBeLessThanOrEqual(CHECK_SECONDS);
  });
});
