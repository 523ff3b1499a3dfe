// The image side of a Qwen-VL model as HfPolicy drives it (models/hf/image-model.ts), for Qwen2.5-VL and Qwen3-VL
// alike: the PIL Qwen2VLImageProcessor (each image its own grid and so its own number of image tokens), the
// architecture's tower on tfjs (models/qwen2_5_vl/, models/qwen3_vl/: image features, and Qwen3-VL's DeepStack
// features), and a prompt's first pass: the features in place of the <|image_pad|> embeddings, get_rope_index's 3-D
// positions and rope deltas (rope-index.ts), DeepStack at the image rows. The tower runs on tfjs, or on ONNX Runtime
// once an engine installs it (ortTower, setTower).
import * as tf from '@tensorflow/tfjs';
import type { RawImage } from '../../core/image.ts';
import type { HfDecoder } from '../hf/decoder.ts';
import type { EngineTower, ImageFeatures, ImageModel, ImagePrefill, ProcessedImages } from '../hf/image-model.ts';
import { mergeImageFeatures, type TokenIds } from '../hf/image-merge.ts';
import type { SessionOptions } from '../onnx/session.ts';
import { type GridThw, imageTokenCount } from './grid.ts';
import type { QwenVlImageProcessor } from './image-processor.ts';
import { ropeIndex } from './rope-index.ts';

/** One call of the tower on tfjs: pixel rows of `grids` → image features [tokens, H] (and DeepStack's, per layer). */
type QwenTower = (
  pixels: Float32Array,
  grids: readonly GridThw[],
) => { features: tf.Tensor2D; deepstack: tf.Tensor2D[] };

export interface QwenImageSide {
  decoder: HfDecoder;
  processor: QwenVlImageProcessor;
  tower: QwenTower;
  /** The same tower on ONNX Runtime (models/onnx/hf/qwen-vl-vision-session.ts); it reads the tfjs weights once. */
  ortTower(options: SessionOptions): { forward: QwenTower; dispose(): void };
  /** Frees the tower's weights. */
  disposeTower(): void;
  imageTokenId: number;
  visionStartTokenId: number;
}

/**
 * An engine's handle on the image model's ORT tower, which is built when first used (or opened before the tfjs
 * weights are released) and shared by every handle: once the tfjs weights are gone no later engine could build its
 * own (serve opens a new engine for an adapter of another shape), so the model owns the session and frees it.
 */
class LazyOrtTower implements EngineTower {
  private inner: { forward: QwenTower; dispose(): void } | null = null;
  constructor(private readonly shared: () => { forward: QwenTower; dispose(): void }) {}
  open(): void {
    this.inner ??= this.shared();
  }
  forward(pixels: Float32Array, grids: readonly GridThw[]) {
    this.open();
    return this.inner!.forward(pixels, grids);
  }
  dispose(): void {
    this.inner = null;
  }
}

export class QwenVlImageModel implements ImageModel {
  readonly imageTokenId: number;
  private active: LazyOrtTower | null = null;
  /** The ORT tower every engine's handle shares (opened with the first engine's session options). */
  private opened: { forward: QwenTower; dispose(): void } | null = null;
  private tfjsReleased = false;
  /** Each processed image's grid, by its pixel rows (what EncodedPrompt.images holds). */
  private readonly grids = new WeakMap<Float32Array, GridThw>();

  constructor(private readonly side: QwenImageSide) {
    this.imageTokenId = side.imageTokenId;
  }

  /** The side of a square image at the processor's largest pixel budget, a multiple of patch × merge. */
  get imageSize(): number {
    const factor = this.side.processor.patchSize * this.side.processor.mergeSize;
    return Math.max(factor, Math.floor(Math.sqrt(this.side.processor.maxPixels) / factor) * factor);
  }

  preprocess(images: readonly RawImage[]): ProcessedImages {
    const pixels: Float32Array[] = [];
    const tokens: number[] = [];
    for (const image of images) {
      const processed = this.side.processor.preprocess([image]);
      const grid = processed.grids[0];
      this.grids.set(processed.data, grid);
      pixels.push(processed.data);
      tokens.push(imageTokenCount(grid, this.side.processor.mergeSize));
    }
    return { pixels, tokens };
  }

  encode(pixels: Float32Array): ImageFeatures {
    const grid = this.grids.get(pixels);
    if (!grid) throw new Error('internal: Qwen-VL pixel values this model did not process');
    if (!this.active && this.tfjsReleased) throw new Error('internal: the tfjs Qwen-VL tower was released');
    const { features, deepstack } = this.active ? this.active.forward(pixels, [grid]) : this.side.tower(pixels, [grid]);
    return { features, grids: [grid], ...(deepstack.length > 0 ? { deepstack } : {}) };
  }

  prefill(ids: TokenIds, features: ImageFeatures, attentionMask?: readonly ArrayLike<number>[]): ImagePrefill {
    if (!features.grids) throw new Error('internal: Qwen-VL image features without their grids');
    const { positions, ropeDeltas } = ropeIndex({
      inputIds: [...ids],
      ...(attentionMask ? { attentionMask: attentionMask as ArrayLike<number>[] } : {}),
      grids: features.grids,
      imageTokenId: this.imageTokenId,
      visionStartTokenId: this.side.visionStartTokenId,
      spatialMergeSize: this.side.processor.mergeSize,
    });
    const embeds = tf.tidy(() =>
      mergeImageFeatures(this.side.decoder.embed([...ids]), ids, this.imageTokenId, features.features),
    );
    const T = ids[0]?.length ?? 0;
    const rows = Int32Array.from(
      ids.flatMap((row, b) => Array.from(row).flatMap((id, t) => (id === this.imageTokenId ? [b * T + t] : []))),
    );
    return {
      embeds,
      mrope: { positions, ropeDeltas },
      ...(features.deepstack ? { deepstack: { rows, features: features.deepstack.map((f) => f.clone()) } } : {}),
    };
  }

  ortTower(options: SessionOptions): EngineTower {
    return new LazyOrtTower(() => (this.opened ??= this.side.ortTower(options)));
  }

  setTower(tower: EngineTower | null): void {
    if (tower && !(tower instanceof LazyOrtTower)) throw new Error('internal: not a Qwen-VL engine tower');
    this.active = tower;
  }

  releaseTowerWeights(): void {
    if (this.tfjsReleased) return;
    this.side.disposeTower();
    this.tfjsReleased = true;
  }

  dispose(): void {
    this.releaseTowerWeights();
    this.opened?.dispose();
    this.opened = null;
    this.side.decoder.dispose();
  }
}
