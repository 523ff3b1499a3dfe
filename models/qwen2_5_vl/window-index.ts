// Qwen2.5-VL's attention windows (transformers' get_window_index): each image's merge units (2×2 blocks of patches,
// lh × lw of them) are grouped into windows of vws × vws units, vws = window_size / merge / patch (floored), windows
// row-major over the image and units row-major inside each; the windows at the right and bottom edges are partial.
// The tower runs its rows window by window (`units`: the unit order), the windowed blocks attend within each window
// (`segments`, in patch rows; empty windows dropped), and the merger's output is put back in image order afterwards.
import type { GridThw } from '../qwen-vl/grid.ts';
import type { Segments } from '../qwen-vl/vision-layout.ts';

/** Unit order (window_index: for each position, the image-order merge unit there) and window segments. */
export function windowIndex(
  grids: readonly GridThw[],
  windowSize: number,
  merge: number,
  patch: number,
): { units: Int32Array; segments: Segments } {
  const vws = Math.floor(windowSize / merge / patch);
  const unit = merge * merge;
  const units: number[] = [];
  const cu: number[] = [0];
  let base = 0;
  for (const [t, h, w] of grids) {
    const lh = h / merge;
    const lw = w / merge;
    // transformers pads to a whole number of windows plus, when lh (lw) is already a multiple of vws, one more empty
    // row (column) of windows; empty windows hold no units and vanish from the segments.
    const nwh = (lh + vws - (lh % vws)) / vws;
    const nww = (lw + vws - (lw % vws)) / vws;
    for (let f = 0; f < t; f++)
      for (let wr = 0; wr < nwh; wr++)
        for (let wc = 0; wc < nww; wc++) {
          let count = 0;
          for (let r = wr * vws; r < Math.min((wr + 1) * vws, lh); r++)
            for (let c = wc * vws; c < Math.min((wc + 1) * vws, lw); c++, count++)
              units.push(base + f * lh * lw + r * lw + c);
          if (count > 0) cu.push(cu[cu.length - 1] + count * unit);
        }
    base += t * lh * lw;
  }
  return { units: Int32Array.from(units), segments: Int32Array.from(cu) };
}
