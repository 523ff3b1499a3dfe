import { describe, expect, it } from 'vitest';
import { imageToPatches, resizeImage } from '../../../models/builtin/vision.ts';
import { defaultArchitecture } from '../../../models/builtin/config.ts';
import type { RawImage } from '../../../core/image.ts';

/** An image whose every 16×16 block has its own red value (block index × 10), green = row within block. */
function blocks(size: number): RawImage {
  const data = new Uint8Array(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = (y * size + x) * 3;
      data[i] = (Math.floor(y / 16) * (size / 16) + Math.floor(x / 16)) * 10;
      data[i + 1] = y % 16;
      data[i + 2] = 255;
    }
  }
  return { width: size, height: size, channels: 3, data };
}

describe('image patches', () => {
  const arch = defaultArchitecture();

  it('cuts a 64×64 image into 16 patches in reading order, each rows then columns then RGB, scaled to [0, 1]', () => {
    const patches = imageToPatches(blocks(64), arch);
    expect(patches).toHaveLength(16 * 16 * 16 * 3);
    for (let p = 0; p < 16; p++) {
      const first = p * 768;
      expect(patches[first]).toBeCloseTo((p * 10) / 255, 6); // red of the patch's first pixel names the patch
      expect(patches[first + 2]).toBe(1);
      expect(patches[first + 16 * 3 + 1]).toBeCloseTo(1 / 255, 6); // second row of the patch: green = 1
    }
  });

  it('resizes other sizes to the model size first', () => {
    const big = blocks(128);
    const small = resizeImage(big, 64, 64);
    expect([small.width, small.height, small.data.length]).toEqual([64, 64, 64 * 64 * 3]);
    expect(small.data[2]).toBe(255);
    expect(imageToPatches(big, arch)).toEqual(imageToPatches(small, arch));
    expect(resizeImage(small, 64, 64)).toBe(small);
  });
});
