import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { UserError } from '../../core/errors.ts';

describe('backend choice', () => {
  it('rejects an unknown --backend name with one line', async () => {
    await expect(initBackend('tpu', null)).rejects.toThrow(new UserError("--backend: unknown backend 'tpu' (choose from node-gpu, node, wasm, cpu)"));
  });

  it('falls through missing native packages to a backend that loads, and reports what it skipped', async () => {
    const lines: string[] = [];
    const choice = await initBackend(undefined, (l) => lines.push(l));
    expect(['node-gpu', 'node', 'wasm']).toContain(choice.name);
    expect(tf.getBackend()).toBe(choice.tfBackend);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^tfjs backend: ${choice.name}`));
    // Once chosen, the backend stays: asking for another one is an error, asking again returns the same.
    expect((await initBackend(choice.name, null)).name).toBe(choice.name);
    await expect(initBackend(choice.name === 'cpu' ? 'wasm' : 'cpu', null)).rejects.toThrow(/already active/);
  });
});
