// The image side of a Hugging Face vision-language model as HfPolicy drives it, whatever the architecture: the
// processor (images → pixel values, and how many image tokens each fills), the vision tower (one processed image → the
// rows that replace its image tokens), and what a prompt's images add to the decoder's first pass beside those rows.
// Each vision-language folder implements it (models/idefics3/model.ts, models/gemma3/model.ts) and its descriptor's
// vision side loads it (models/hf/architecture.ts). The tower is frozen (LoRA trains the language model), so a
// processed image's features are computed once and reused by every pass; an engine may run the tower elsewhere
// (ortTower, installed with setTower).
import type * as tf from '@tensorflow/tfjs';
import type { RawImage } from '../../core/image.ts';
import type { SessionOptions } from '../onnx/session.ts';
import type { TokenIds } from './image-merge.ts';

/** Images as the processor wrote them, one entry per image, in order. */
export interface ProcessedImages {
  /** Each image's pixel values, as its tower reads them. */
  pixels: Float32Array[];
  /** The image tokens each image fills in the prompt (its placeholder's expansion). */
  tokens: number[];
}

/**
 * What the tower gives for one image (or, concatenated in order, for several): the rows that replace its image tokens,
 * [tokens, text hidden]; Qwen-VL also its (t, h, w) patch grid (the prompt's 3-D positions follow it) and Qwen3-VL its
 * DeepStack features, one [tokens, text hidden] per tapped layer.
 */
export interface ImageFeatures {
  features: tf.Tensor2D;
  grids?: (readonly [number, number, number])[];
  deepstack?: tf.Tensor2D[];
}

/** The first pass's inputs for prompts with images, beside their token ids. */
export interface ImagePrefill {
  /** Token embeddings [B, T, H] with the image-token rows replaced by the features (Gemma: after its scaling). */
  embeds: tf.Tensor3D;
  /** Gemma 3: 1 on image tokens (each image's tokens attend to each other both ways in the prefill). */
  tokenTypeIds?: ArrayLike<number>[];
  /** Qwen-VL: [3, B·T] positions (axis-major) and each row's rope delta (models/qwen-vl/rope-index.ts). */
  mrope?: { positions: Int32Array; ropeDeltas: number[] };
  /** Qwen3-VL: DeepStack features at the image tokens' rows (b·T + t), per tapped layer. */
  deepstack?: { rows: Int32Array; features: tf.Tensor2D[] };
}

/** A vision tower on another engine (ONNX Runtime): opened on first use or by open(). */
export interface EngineTower {
  /** Build it now (it reads the tower's weights: before they are released from tfjs). */
  open(): void;
  dispose(): void;
}

export interface ImageModel {
  /** The token whose positions the image features fill. */
  readonly imageTokenId: number;
  /** Width of the images the processor gives the tower (for Sampler.imageSize: > 0 means the model reads images). */
  readonly imageSize: number;
  preprocess(images: readonly RawImage[]): ProcessedImages;
  /** One processed image's features, from the tower in use. */
  encode(pixels: Float32Array): ImageFeatures;
  /**
   * The first pass's inputs of left-padded `ids` (`attentionMask`: 0 on their padding; default none) whose images gave
   * `features` (all images in order, concatenated).
   */
  prefill(ids: TokenIds, features: ImageFeatures, attentionMask?: readonly ArrayLike<number>[]): ImagePrefill;
  /** The tower on ONNX Runtime (not opened until used). */
  ortTower(options: SessionOptions): EngineTower;
  /** Run the tower on `tower` (one this model's ortTower made) from now on; null: tfjs again. */
  setTower(tower: EngineTower | null): void;
  /** Free tfjs's copies of the tower's projections once an engine tower holds them; tfjs cannot run it afterwards. */
  releaseTowerWeights(): void;
  /** Frees the model: its tower and the language model it was loaded over. */
  dispose(): void;
}
