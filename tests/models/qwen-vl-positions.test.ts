// The Qwen-VL multimodal RoPE positions (models/qwen-vl/rope-index.ts: get_rope_index, rope_deltas, decoding
// positions) against both fixtures' 3-D position ids (one- and two-image prompts, a text-only prompt, the left-padded
// mixed batch), and the layouts of the cos / sin tables (models/layers/mrope.ts). The tables' values are pinned
// through the language model's logits in qwen-vl-language-model.test.ts.
import { describe, expect, it } from 'vitest';
import { UserError } from '../../core/errors.ts';
import { decodePositions, ropeIndex } from '../../models/qwen-vl/rope-index.ts';
import { mropeSlotAxes, mropeValues, type MropeSpec } from '../../models/layers/mrope.ts';
import { inverseFrequencies, ropeValues } from '../../models/layers/rope.ts';
import type { GridThw } from '../../models/qwen-vl/grid.ts';
import { maxAbsDiff, readJson } from './hf-vision-fixtures.ts';

interface PromptRef {
  input_ids: number[][];
  attention_mask?: number[][];
  position_ids: number[][] | number[][][];
  rope_deltas: number[];
  image_grid_thw?: number[][];
  greedy?: { new_ids: number[] | number[][]; decode_position_ids: number[] | number[][] };
}

const ids = { imageTokenId: 252, visionStartTokenId: 250, spatialMergeSize: 2 };

for (const folder of ['qwen2_5_vl', 'qwen3_vl'] as const) {
  describe(`get_rope_index against ${folder}/reference.json`, () => {
    const ref = readJson(folder, 'reference.json') as Record<string, PromptRef>;

    for (const name of ['one_image', 'two_images', 'text_only'] as const) {
      it(`${name}: position ids [3, L], rope_deltas and the decoding positions`, () => {
        const r = ref[name];
        const grids = (r.image_grid_thw ?? []) as unknown as GridThw[];
        const out = ropeIndex({ inputIds: r.input_ids, grids, ...ids });
        expect(Array.from(out.positions)).toEqual((r.position_ids as number[][]).flat());
        expect(out.ropeDeltas).toEqual(r.rope_deltas);
        if (r.greedy) {
          // Decoding step t >= 1 feeds new_ids[t - 1] at cache position prompt_len + t - 1.
          const L = r.input_ids[0].length;
          const steps = (r.greedy.decode_position_ids as number[]).map(
            (_, t) => decodePositions(out.ropeDeltas, L + t)[0],
          );
          expect(steps).toEqual(r.greedy.decode_position_ids);
        }
      });
    }

    it('batch: a text row and an image row left-padded together, pads at 1, per-row rope_deltas and decode positions', () => {
      const r = ref.batch;
      const out = ropeIndex({
        inputIds: r.input_ids,
        attentionMask: r.attention_mask,
        grids: r.image_grid_thw as unknown as GridThw[],
        ...ids,
      });
      expect(Array.from(out.positions)).toEqual((r.position_ids as number[][][]).flat(2));
      expect(out.ropeDeltas).toEqual(r.rope_deltas);
      const L = r.input_ids[0].length;
      const steps = (r.greedy!.decode_position_ids as number[][]).map((_, t) => decodePositions(out.ropeDeltas, L + t));
      expect(steps).toEqual(r.greedy!.decode_position_ids);
    });

    it('refuses image runs that do not match the images given, with one line', () => {
      const r = ref.two_images;
      const grids = r.image_grid_thw as unknown as GridThw[];
      expect(() => ropeIndex({ inputIds: r.input_ids, grids: grids.slice(0, 1), ...ids })).toThrow(
        /more image runs than the 1 images given/,
      );
      expect(() => ropeIndex({ inputIds: r.input_ids, grids: [...grids, grids[0]], ...ids })).toThrow(
        /2 image runs for 3 images/,
      );
      expect(() =>
        ropeIndex({
          inputIds: r.input_ids,
          grids: [
            [1, 8, 12],
            [1, 12, 6],
          ],
          ...ids,
        }),
      ).toThrow(UserError);
      expect(() => ropeIndex({ inputIds: [[5, 252, 252]], grids: [], ...ids })).toThrow(/is in no image's run/);
    });
  });
}

describe('multimodal RoPE tables (models/layers/mrope.ts)', () => {
  const spec = (section: [number, number, number], layout: MropeSpec['layout']): MropeSpec => ({
    section,
    layout,
    headDim: 16,
    theta: 1e6,
  });

  it('assigns frequency slots as the README pins: Qwen2.5-VL chunked [2, 3, 3], Qwen3-VL interleaved [4, 2, 2]', () => {
    expect(Array.from(mropeSlotAxes(spec([2, 3, 3], 'chunked')))).toEqual([0, 0, 1, 1, 1, 2, 2, 2]);
    expect(Array.from(mropeSlotAxes(spec([4, 2, 2], 'interleaved')))).toEqual([0, 1, 2, 0, 1, 2, 0, 0]);
    // The real models' sections: [16, 24, 24] chunked over 64 slots; [24, 20, 20] interleaved (THW… then T at the end).
    const real = mropeSlotAxes({ section: [24, 20, 20], layout: 'interleaved', headDim: 128, theta: 5e6 });
    expect(Array.from(real.subarray(0, 6))).toEqual([0, 1, 2, 0, 1, 2]);
    expect(Array.from(real.subarray(58))).toEqual([1, 2, 0, 0, 0, 0]);
    expect(() => mropeSlotAxes(spec([2, 3, 4], 'chunked'))).toThrow(/sums to 9, not head_dim \/ 2 = 8/);
  });

  it('is plain 1-D RoPE on text rows (equal ids on the three axes), and reads each axis where the layout says', () => {
    const n = 5;
    const text = Int32Array.from([0, 3, 7, 11, 40, 0, 3, 7, 11, 40, 0, 3, 7, 11, 40]);
    const plain = ropeValues(text.subarray(0, n), inverseFrequencies(16, 1e6));
    for (const layout of ['chunked', 'interleaved'] as const) {
      const m = mropeValues(text, spec(layout === 'chunked' ? [2, 3, 3] : [4, 2, 2], layout));
      expect(maxAbsDiff(m.cos, plain.cos)).toBe(0);
      expect(maxAbsDiff(m.sin, plain.sin)).toBe(0);
    }
    // One image token at (t, h, w) = (4, 6, 9): slot j's angle is that axis's id times inv_freq[j].
    const inv = inverseFrequencies(16, 1e6);
    const { cos } = mropeValues(Int32Array.from([4, 6, 9]), spec([2, 3, 3], 'chunked'));
    const axisIds = [4, 4, 6, 6, 6, 9, 9, 9];
    axisIds.forEach((p, j) => {
      expect(cos[j]).toBeCloseTo(Math.cos(Math.fround(p * inv[j])), 6);
      expect(cos[8 + j]).toBe(cos[j]);
    });
  });
});
