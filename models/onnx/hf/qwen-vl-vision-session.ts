// The Qwen2.5-VL and Qwen3-VL vision towers on ONNX Runtime: the session of one tower's graph
// (qwen-vl-vision-graph.ts), fed per call with the call's layout (models/qwen-vl/vision-layout.ts, computed here on
// the host from the images' grids), giving what qwen25VisionForward / qwen3VisionForward give on tfjs. The towers are
// frozen (LoRA trains the language model), so no gradient is asked of them.
import * as tf from '@tensorflow/tfjs';
import type { Tensor } from 'onnxruntime-common';
import type { GridThw } from '../../qwen-vl/grid.ts';
import { type Segments, towerRows, type VisionLayout } from '../../qwen-vl/vision-layout.ts';
import type { Qwen25VisionConfig } from '../../qwen2_5_vl/config.ts';
import { qwen25VisionLayout } from '../../qwen2_5_vl/vision-tower.ts';
import type { Qwen25VisionWeights } from '../../qwen2_5_vl/vision-weights.ts';
import type { Qwen3VisionConfig } from '../../qwen3_vl/config.ts';
import { qwen3VisionLayout } from '../../qwen3_vl/vision-tower.ts';
import type { Qwen3VisionWeights } from '../../qwen3_vl/vision-weights.ts';
import { buildQwen25VisionGraph, buildQwen3VisionGraph } from './qwen-vl-vision-graph.ts';
import { type Feeds, floatTensor, int64Tensor, OrtSession, type SessionOptions } from '../session.ts';
import { weightFileOf } from '../weight-file.ts';

/** float32's lowest value: what a padded key's score gets (transformers masks with finfo.min too). */
const MASKED = -3.4028234663852886e38;

/**
 * Segments padded to the longest one (L slots each): the row in each slot (padding repeats the segment's first row),
 * the additive key mask, and each row's slot in the flattened [S·L] layout.
 */
function paddedSegments(cu: Segments, rows: number, scope: string): Feeds {
  const S = cu.length - 1;
  let L = 0;
  for (let s = 0; s < S; s++) L = Math.max(L, cu[s + 1] - cu[s]);
  const gather = new Int32Array(S * L);
  const mask = new Float32Array(S * L);
  const scatter = new Int32Array(rows);
  for (let s = 0; s < S; s++) {
    const len = cu[s + 1] - cu[s];
    for (let j = 0; j < L; j++) {
      gather[s * L + j] = j < len ? cu[s] + j : cu[s];
      if (j < len) scatter[cu[s] + j] = s * L + j;
      else mask[s * L + j] = MASKED;
    }
  }
  return {
    [`${scope}_gather`]: int64Tensor(gather, [S, L]),
    [`${scope}_mask`]: floatTensor(mask, [S, 1, 1, L]),
    [`${scope}_scatter`]: int64Tensor(scatter, [rows]),
  };
}

export class QwenVisionOrtTower {
  private constructor(
    private readonly session: OrtSession,
    private readonly layoutOf: (grids: readonly GridThw[]) => VisionLayout,
    private readonly rowWidth: number,
    private readonly outHidden: number,
  ) {}

  /**
   * Qwen2.5-VL's tower. Its weights go to a file of their own that ORT maps (weight-file.ts), without prepacking (the
   * tower runs once per prompt's images, not once per token), as the SigLIP tower's do.
   */
  static qwen25(weights: Qwen25VisionWeights, config: Qwen25VisionConfig, options: SessionOptions = {}) {
    const shared = weightFileOf(weights, 'Qwen2.5-VL vision tower');
    const session = new OrtSession(buildQwen25VisionGraph(weights, config, { shared }), {
      label: 'Qwen2.5-VL vision tower',
      prepack: false,
      ...options,
    });
    return new QwenVisionOrtTower(
      session,
      (g) => qwen25VisionLayout(g, config),
      rowWidthOf(config),
      config.outHiddenSize,
    );
  }

  /** Qwen3-VL's tower (image features and the DeepStack features). */
  static qwen3(weights: Qwen3VisionWeights, config: Qwen3VisionConfig, options: SessionOptions = {}) {
    const shared = weightFileOf(weights, 'Qwen3-VL vision tower');
    const session = new OrtSession(buildQwen3VisionGraph(weights, config, { shared }), {
      label: 'Qwen3-VL vision tower',
      prepack: false,
      ...options,
    });
    return new QwenVisionOrtTower(
      session,
      (g) => qwen3VisionLayout(g, config),
      rowWidthOf(config),
      config.outHiddenSize,
    );
  }

  /**
   * The image processor's rows [Σ t·h·w, C·T·P·P] for `grids` (image 0 first) → image features [M, out_hidden]
   * (M = Σ t·h·w / merge², image order) and the DeepStack features (Qwen3-VL; none for Qwen2.5-VL), each [M, out_hidden].
   */
  forward(pixels: Float32Array, grids: readonly GridThw[]): { features: tf.Tensor2D; deepstack: tf.Tensor2D[] } {
    const layout = this.layoutOf(grids);
    const N = layout.rows;
    const hd = layout.headDim;
    const feeds: Feeds = {
      pixel_values: floatTensor(towerRows(pixels, this.rowWidth, layout), [N, this.rowWidth]),
      rotary_cos: floatTensor(layout.cos, [N, hd]),
      rotary_sin: floatTensor(layout.sin, [N, hd]),
      ...paddedSegments(layout.segments.image, N, 'image'),
    };
    const wanted = new Set(this.session.inputNames);
    if (wanted.has('window_gather')) Object.assign(feeds, paddedSegments(layout.segments.window!, N, 'window'));
    if (wanted.has('restore_index')) feeds.restore_index = int64Tensor(layout.restore!, [layout.restore!.length]);
    if (wanted.has('position_index')) {
      const taps = layout.positionTaps!;
      feeds.position_index = int64Tensor(taps.index, [4, N]);
      feeds.position_weight = floatTensor(taps.weight, [4, N, 1]);
    }
    const out = this.session.run(feeds);
    const M = out.image_embeds.dims[0] as number;
    const matrix = (t: Tensor) => tf.tensor2d(t.data as Float32Array, [M, this.outHidden]);
    const deepstack = this.session.outputNames.filter((n) => n.startsWith('deepstack_embeds_'));
    return { features: matrix(out.image_embeds), deepstack: deepstack.map((n) => matrix(out[n])) };
  }

  dispose(): void {
    this.session.dispose();
  }
}

function rowWidthOf(config: Qwen25VisionConfig | Qwen3VisionConfig): number {
  return config.inChannels * config.temporalPatchSize * config.patchSize ** 2;
}
