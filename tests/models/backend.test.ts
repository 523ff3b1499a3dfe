import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { BACKEND_NAMES, currentBackend, initBackend, NO_WEBGPU_BACKEND } from '../../models/backend.ts';
import { UserError } from '../../core/errors.ts';

describe('backend choice', () => {
  it('rejects an unknown --backend name with one line', async () => {
    await expect(initBackend('tpu', null)).rejects.toThrow(
      new UserError("--backend: unknown backend 'tpu' (choose from node-gpu, node, wasm, cpu)"),
    );
  });

  // Before any backend is chosen (the next test chooses one for this process).
  it('--backend webgpu is refused in one line that names the GPU path to use, and leaves the choice open', async () => {
    // tfjs's WebGPU backend cannot run in Node (models/backend.ts's header says what was seen on a GPU).
    await expect(initBackend('webgpu', null)).rejects.toThrow(new UserError(NO_WEBGPU_BACKEND));
    expect(NO_WEBGPU_BACKEND).not.toContain('\n');
    expect(NO_WEBGPU_BACKEND).toMatch(/--device webgpu/);
    expect(currentBackend()).toBeNull();
  });

  it('falls through missing native packages to a backend that loads, and reports what it skipped', async () => {
    const lines: string[] = [];
    const choice = await initBackend(undefined, (l) => lines.push(l));
    expect(['node-gpu', 'node', 'wasm']).toContain(choice.name);
    expect(tf.getBackend()).toBe(choice.tfBackend);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^tfjs backend: ${choice.name}`));
    // What it skipped is the part of BACKEND_NAMES before the choice.
    expect(choice.skipped.map((s) => s.split(':')[0])).toEqual(
      BACKEND_NAMES.slice(0, BACKEND_NAMES.indexOf(choice.name)),
    );
    // Once chosen, the backend stays: asking for another one is an error, asking again returns the same.
    expect((await initBackend(choice.name, null)).name).toBe(choice.name);
    await expect(initBackend(choice.name === 'cpu' ? 'wasm' : 'cpu', null)).rejects.toThrow(/already active/);
  });
});
