// The 3-D position ids of a Qwen-VL prompt (transformers' get_rope_index, Qwen2.5-VL and Qwen3-VL alike for images),
// the multimodal RoPE's input (mrope.ts), and the positions that continue through decoding.
//
// Per row, on its unpadded tokens: text tokens get t = h = w = a running index; the lh × lw tokens of an image (the
// `<|image_pad|>` run after a `<|vision_start|>`, lh = grid_h / merge, lw = grid_w / merge) get (s, s + r, s + c) for
// merged-grid row r and column c, s being the position the image starts at; text after an image continues at the
// largest position so far + 1. Pads get 1 (transformers 4.57; v5 writes 0; they are never attended).
// rope_delta = largest position + 1 − padded length, and a decoding step at cache position p (pads counted) has
// position p + rope_delta on all three axes: the prompt's largest position + 1 + the step.
import { UserError } from '../../core/errors.ts';
import type { GridThw } from './grid.ts';

export interface RopeIndexInput {
  /** [B][L] token ids (left-padded batches). */
  inputIds: ArrayLike<number>[];
  /** [B][L] 1 on real tokens, 0 on pads; default all ones. */
  attentionMask?: ArrayLike<number>[];
  /** One grid per image, in the order the image runs appear (row-major over batch, position). */
  grids: readonly GridThw[];
  imageTokenId: number;
  visionStartTokenId: number;
  spatialMergeSize: number;
}

export interface RopeIndex {
  /** [3, B, L] row-major: temporal, height and width ids of every token. */
  positions: Int32Array;
  /** [B] largest position + 1 − L. */
  ropeDeltas: number[];
}

/** get_rope_index for images (see the header). A prompt whose image runs do not match the grids is refused. */
export function ropeIndex(input: RopeIndexInput): RopeIndex {
  const B = input.inputIds.length;
  const L = input.inputIds[0]?.length ?? 0;
  const m = input.spatialMergeSize;
  const positions = new Int32Array(3 * B * L).fill(1);
  const ropeDeltas: number[] = [];
  let image = 0;
  for (let b = 0; b < B; b++) {
    const ids = input.inputIds[b];
    const mask = input.attentionMask?.[b];
    if (ids.length !== L || (mask && mask.length !== L))
      throw new Error(`ropeIndex: row ${b} has ${ids.length} ids (mask ${mask?.length}), row 0 has ${L}`);
    const kept: number[] = []; // indices of the row's real tokens
    for (let j = 0; j < L; j++) if (!mask || mask[j] === 1) kept.push(j);
    const set = (k: number, t: number, h: number, w: number) => {
      const j = kept[k];
      positions[b * L + j] = t;
      positions[B * L + b * L + j] = h;
      positions[2 * B * L + b * L + j] = w;
    };
    let next = 0; // the position the next text token gets
    let k = 0;
    while (k < kept.length) {
      const id = ids[kept[k]];
      const startsImage = id === input.imageTokenId && k > 0 && ids[kept[k - 1]] === input.visionStartTokenId;
      if (!startsImage) {
        if (id === input.imageTokenId)
          throw new UserError(
            `row ${b}: the image token at position ${kept[k]} is in no image's run (<|vision_start|> then grid_h·grid_w / merge² image tokens)`,
          );
        set(k, next, next, next);
        next++;
        k++;
        continue;
      }
      const grid = input.grids[image];
      if (!grid) throw new UserError(`the prompt has more image runs than the ${input.grids.length} images given`);
      const lh = grid[1] / m;
      const lw = grid[2] / m;
      for (let r = 0; r < lh; r++)
        for (let c = 0; c < lw; c++, k++) {
          if (k >= kept.length || ids[kept[k]] !== input.imageTokenId)
            throw new UserError(
              `row ${b}: image ${image} (grid [${grid}]) needs ${lh * lw} image tokens, the prompt has fewer`,
            );
          set(k, next, next + r, next + c);
        }
      next += Math.max(lh, lw); // the largest id so far is next + max(lh, lw) - 1 (t stays at next)
      image++;
    }
    ropeDeltas.push(next - L);
  }
  if (image !== input.grids.length)
    throw new UserError(`the prompt has ${image} image runs for ${input.grids.length} images`);
  return { positions, ropeDeltas };
}

/** Positions of a decoding step at cache position `cachePosition` (pads counted), per row: the same on all 3 axes. */
export function decodePositions(ropeDeltas: readonly number[], cachePosition: number): number[] {
  return ropeDeltas.map((delta) => cachePosition + delta);
}
