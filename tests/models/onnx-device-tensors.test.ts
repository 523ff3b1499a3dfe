// DeviceTensors (models/onnx/device-tensors.ts), the IO-binding helpers that keep tensors on the execution device
// between runs, on the CPU provider (the same run path as WebGPU's, with 'cpu' locations): uploads keep the values,
// gatherRows picks rows along axis 0 as a prompt cache is repeated for its group, and a released tensor cannot be fed
// again (as a freed GPU buffer cannot). Then the same on a WebGPU device, where there is one.
import { afterAll, describe, expect, it } from 'vitest';
import { Tensor } from 'onnxruntime-common';
import { DeviceTensors } from '../../models/onnx/device-tensors.ts';
import { WEBGPU_MISSING } from '../helpers/webgpu.ts';

const kept = new DeviceTensors({ threads: 1 }, 'cpu');
afterAll(() => kept.dispose());

describe('DeviceTensors', () => {
  it('uploads tensors of several ranks unchanged', () => {
    const a = new Tensor(
      'float32',
      Float32Array.from({ length: 6 }, (_, i) => i * 0.5 - 1),
      [2, 3],
    );
    const b = new Tensor('float32', Float32Array.from([7, -8, 9, 1e-7]), [4]);
    const [ua, ub] = kept.upload([a, b]);
    expect(ua.dims).toEqual([2, 3]);
    expect(Array.from(ua.data as Float32Array)).toEqual(Array.from(a.data as Float32Array));
    expect(Array.from(ub.data as Float32Array)).toEqual(Array.from(b.data as Float32Array));
  });

  it('picks rows along the first axis (a prompt cache repeated for a group of 3)', () => {
    // [2, 1, 2, 2]: two prompt rows of a one-head, two-position cache.
    const cache = new Tensor(
      'float32',
      Float32Array.from({ length: 8 }, (_, i) => i + 1),
      [2, 1, 2, 2],
    );
    const [picked] = kept.gatherRows([cache], [0, 0, 0, 1, 1, 1]);
    expect(picked.dims).toEqual([6, 1, 2, 2]);
    const data = Array.from(picked.data as Float32Array);
    expect(data.slice(0, 12)).toEqual([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4]);
    expect(data.slice(12)).toEqual([5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8]);
  });

  it('refuses a released tensor as an input', () => {
    const [x] = kept.upload([new Tensor('float32', new Float32Array([1, 2]), [2])]);
    kept.release([x]);
    expect(() => kept.upload([x])).toThrow(/location/);
  });
});

// The same on a real WebGPU device (tests/helpers/webgpu.ts: a GPU or lavapipe): the tensors live in GPU buffers, and
// are read back through a session of the same device whose outputs come to the host.
describe.skipIf(WEBGPU_MISSING !== null)('DeviceTensors on WebGPU', () => {
  const gpu = new DeviceTensors({ device: 'webgpu' }, 'gpu-buffer');
  const host = new DeviceTensors({ device: 'webgpu' }, 'cpu');
  afterAll(() => {
    gpu.dispose();
    host.dispose();
  });

  it('keeps uploads and gathered rows in GPU buffers, with their values', () => {
    const cache = new Tensor(
      'float32',
      Float32Array.from({ length: 8 }, (_, i) => i + 1),
      [2, 1, 2, 2],
    );
    const [onDevice] = gpu.upload([cache]);
    expect(onDevice.location).toBe('gpu-buffer');
    const [picked] = gpu.gatherRows([onDevice], [1, 0, 1]);
    expect(picked.location).toBe('gpu-buffer');
    expect(picked.dims).toEqual([3, 1, 2, 2]);
    const [back] = host.upload([picked]);
    expect(Array.from(back.data as Float32Array)).toEqual([5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8]);
    gpu.release([onDevice, picked]);
    expect(() => host.upload([picked])).toThrow();
  });
});
