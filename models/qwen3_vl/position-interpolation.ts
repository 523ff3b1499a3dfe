// Qwen3-VL's learned position embedding fitted to each image (transformers' fast_pos_embed_interpolate): the n × n
// table (n² = num_position_embeddings) is sampled bilinearly at grid_h × grid_w points spread evenly over it,
//   h_idx = linspace(0, n − 1, grid_h) (float32), floor = int(h_idx), ceil = min(floor + 1, n − 1), dh = h_idx − floor,
//   row = (1−dh)(1−dw)·T[fh, fw] + (1−dh)dw·T[fh, cw] + dh(1−dw)·T[ch, fw] + dh·dw·T[ch, cw]   (summed in that order)
// (same for w), then put in the patch rows' merge-block order. The taps (indices and weights) are computed here on
// the host; the tower's executor gathers and sums the table rows.
import type { GridThw } from '../qwen-vl/grid.ts';
import type { PositionTaps } from '../qwen-vl/vision-layout.ts';

/**
 * torch.linspace(start, end, steps) in float32: step = (end − start) / (steps − 1) in float32, the first half
 * start + step · i and the second half end − step · (steps − 1 − i), each point rounded to float32 once (a fused
 * multiply-add in torch's kernel; rounding the product first moves some points by one ulp).
 */
export function linspaceFloat32(start: number, end: number, steps: number): Float32Array {
  const f = Math.fround;
  const out = new Float32Array(steps);
  if (steps === 1) {
    out[0] = start;
    return out;
  }
  const step = f(f(end - start) / (steps - 1));
  const halfway = Math.floor(steps / 2);
  // step · i is exact in double (a 24-bit mantissa times a small integer), so one fround is one rounding.
  for (let i = 0; i < steps; i++) out[i] = f(i < halfway ? start + step * i : end - step * (steps - 1 - i));
  return out;
}

/** The four taps of every patch row of `grids` (merge-block order, image 0 first): index and weight [4, rows]. */
export function positionTaps(grids: readonly GridThw[], numPositions: number, merge: number): PositionTaps {
  const f = Math.fround;
  const n = Math.round(Math.sqrt(numPositions));
  const rows = grids.reduce((s, [t, h, w]) => s + t * h * w, 0);
  const index = new Int32Array(4 * rows);
  const weight = new Float32Array(4 * rows);
  let i = 0;
  for (const [t, h, w] of grids) {
    const hs = linspaceFloat32(0, n - 1, h);
    const ws = linspaceFloat32(0, n - 1, w);
    for (let frame = 0; frame < t; frame++)
      for (let br = 0; br < h / merge; br++)
        for (let bc = 0; bc < w / merge; bc++)
          for (let r = 0; r < merge; r++)
            for (let c = 0; c < merge; c++, i++) {
              const y = hs[br * merge + r];
              const x = ws[bc * merge + c];
              const fy = Math.trunc(y);
              const fx = Math.trunc(x);
              const cy = Math.min(fy + 1, n - 1);
              const cx = Math.min(fx + 1, n - 1);
              const dy = f(y - fy);
              const dx = f(x - fx);
              const taps: [number, number][] = [
                [fy * n + fx, f(f(1 - dy) * f(1 - dx))],
                [fy * n + cx, f(f(1 - dy) * dx)],
                [cy * n + fx, f(dy * f(1 - dx))],
                [cy * n + cx, f(dy * dx)],
              ];
              taps.forEach(([idx, wt], j) => {
                index[j * rows + i] = idx;
                weight[j * rows + i] = wt;
              });
            }
  }
  return { index, weight };
}
