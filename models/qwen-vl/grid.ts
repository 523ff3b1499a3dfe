// An image's patch grid (grid_t, grid_h, grid_w) as Qwen2-VL's image processor reports it in `image_grid_thw`, and what
// follows from it: how many language-model tokens the image becomes (one per spatial_merge_size² block of patches).
// Shared by the Qwen2.5-VL and Qwen3-VL image processors, vision towers and multimodal RoPE positions.
import { UserError } from '../../core/errors.ts';

/** [grid_t, grid_h, grid_w] in patches. Images have grid_t = 1 (one temporal patch of two identical frames). */
export type GridThw = readonly [number, number, number];

/** Image tokens (merged rows of the vision tower) of one grid: t · h · w / merge². */
export function imageTokenCount(grid: GridThw, merge: number): number {
  return (grid[0] * grid[1] * grid[2]) / (merge * merge);
}

/** Patch rows of one grid (rows of `pixel_values`): t · h · w. */
export function patchCount(grid: GridThw): number {
  return grid[0] * grid[1] * grid[2];
}

/**
 * Check grids before a tower or the RoPE positions use them: images only (grid_t 1; videos, whose grid_t counts frame
 * pairs, are not supported) and whole merge blocks (h and w multiples of spatial_merge_size).
 */
export function checkImageGrids(grids: readonly GridThw[], merge: number, what = 'image_grid_thw'): void {
  grids.forEach((g, i) => {
    if (g.length !== 3 || !g.every((v) => Number.isInteger(v) && v > 0))
      throw new UserError(`${what}[${i}] is [${g}], not three positive integers`);
    if (g[0] !== 1)
      throw new UserError(`${what}[${i}] has grid_t ${g[0]}: video inputs are not supported (images have grid_t 1)`);
    if (g[1] % merge !== 0 || g[2] % merge !== 0)
      throw new UserError(`${what}[${i}] is [${g}]: height and width must be multiples of spatial_merge_size ${merge}`);
  });
}
