import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { AUTO_ORDER, currentBackend, initBackend } from '../../models/backend.ts';
import { UserError } from '../../core/errors.ts';

describe('backend choice', () => {
  it('rejects an unknown --backend name with one line', async () => {
    await expect(initBackend('tpu', null)).rejects.toThrow(new UserError("--backend: unknown backend 'tpu' (choose from node-gpu, node, webgpu, wasm, cpu)"));
  });

  // Before any backend is chosen (the next test chooses one for this process).
  it('a forced webgpu backend that cannot start is a one-line error and leaves the choice open', async () => {
    // This machine has no GPU: Dawn finds no adapter (or the optional webgpu package is absent).
    await expect(initBackend('webgpu', null)).rejects.toThrow(/^--backend webgpu: (Dawn found no GPU adapter|the `webgpu` package)/);
    expect(currentBackend()).toBeNull();
    expect((globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu).toBeUndefined();
  }, 60_000);

  it('falls through missing native packages to a backend that loads, and reports what it skipped', async () => {
    const lines: string[] = [];
    const choice = await initBackend(undefined, (l) => lines.push(l));
    expect(['node-gpu', 'node', 'wasm']).toContain(choice.name);
    expect(tf.getBackend()).toBe(choice.tfBackend);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^tfjs backend: ${choice.name}`));
    // The automatic order never tries webgpu: what it skipped is the part of AUTO_ORDER before the choice.
    expect(AUTO_ORDER).not.toContain('webgpu');
    expect(choice.skipped.map((s) => s.split(':')[0])).toEqual(AUTO_ORDER.slice(0, AUTO_ORDER.indexOf(choice.name)));
    // Once chosen, the backend stays: asking for another one is an error, asking again returns the same.
    expect((await initBackend(choice.name, null)).name).toBe(choice.name);
    await expect(initBackend(choice.name === 'cpu' ? 'wasm' : 'cpu', null)).rejects.toThrow(/already active/);
  });
});
