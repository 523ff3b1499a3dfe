// What the two SigLIP-based Hugging Face vision-language models (Idefics3 / SmolVLM, Gemma 3) share around the
// language model: token embeddings with image features merged in (models/hf/image-merge.ts), one forward pass,
// generate()-style greedy or sampled decoding whose prefill carries the images, and the ImageModel that HfPolicy
// drives (models/hf/image-model.ts): square images of one size, a fixed number of image tokens each, the SigLIP tower
// swappable for an engine's. models/idefics3/model.ts and models/gemma3/model.ts supply the image encoder and
// processor and, for Gemma 3, the bidirectional image block (token_type_ids).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';

import type { HfModelConfig } from './config.ts';
import type { ForwardInput, ForwardOutput, HfDecoder } from './decoder.ts';
import { generate, type GenerateOptions, type GenerateResult } from './generate.ts';
import type { EngineTower, ImageFeatures, ImageModel, ImagePrefill, ProcessedImages } from './image-model.ts';
import { mergeImageFeatures, type TokenIds } from './image-merge.ts';
import type { PixelValues } from './pixel-values.ts';
import type { CheckpointTensors } from './weights.ts';
import { releaseSiglipProjections, type SiglipWeights, type TensorLookup } from '../vision/siglip.ts';
import type { VisionConfig } from '../vision/vision-config.ts';
import type { SessionOptions } from '../onnx/session.ts';
import type { RawImage } from '../../core/image.ts';
import { readJson } from '../../core/files.ts';
import { z } from 'zod';

/** Images -> the rows that replace image tokens ([n · tokensPerImage, text hidden], image 0 first). */
export interface ImageEncoder {
  readonly tokensPerImage: number;
  encode(pixels: PixelValues | tf.Tensor4D): tf.Tensor2D;
  /** The SigLIP tower inside (an engine may run it elsewhere: models/onnx/hf/siglip-session.ts). */
  readonly tower: SiglipWeights;
  readonly towerConfig: VisionConfig;
  /** Runs the tower on pixels [n, C, S, S] → [n, L, D] for encode: tfjs's siglipForward unless an engine set another. */
  runTower: (pixels: tf.Tensor4D) => tf.Tensor3D;
  dispose(): void;
}

/**
 * The images of a prompt, in the order their tokens appear: pixel values [n, 3, S, S], or image features already
 * encoded by `images.encode` ([n · tokensPerImage, text hidden]). The vision tower is frozen (LoRA targets the language
 * model), so a trainer can encode a prompt's images once and reuse the rows for every sample, the old policy and the
 * reference; the tower costs far more than the language model on a 512 px image.
 */
export type ImageInput = { pixelValues: PixelValues | tf.Tensor4D } | { imageFeatures: tf.Tensor2D };

/** A SigLIP tower on another engine: pixels [n, C, S, S] → [n, L, D], as siglipForward gives them. */
export interface SiglipEngineTower extends EngineTower {
  forward(pixels: tf.Tensor4D): tf.Tensor3D;
}

/** What both processors offer (models/idefics3/processor.ts, models/gemma3/processor.ts): images → [n, 3, S, S]. */
export interface SquareImageProcessor {
  preprocess(images: readonly RawImage[]): PixelValues;
}

/** A forward pass whose prompt may hold images (absent: text only, as in decode steps). */
export type VisionForwardInput = Omit<ForwardInput, 'inputsEmbeds'> & { images?: ImageInput };

/** A checkpoint folder's preprocessor_config.json, parsed ({} when the folder has none: the processor's defaults). */
export function readPreprocessorConfig(dir: string): { raw: unknown; source: string } {
  const source = join(dir, 'preprocessor_config.json');
  if (!existsSync(source)) return { raw: {}, source };
  return { raw: readJson(source, z.unknown()), source };
}

/** The checkpoint's tensors as a lookup for the vision loaders. */
export function tensorLookup(tensors: CheckpointTensors): TensorLookup {
  return (name) => (tensors.has(name) ? tensors.read(name) : undefined);
}

export abstract class VisionLanguageModel implements ImageModel {
  private readonly tfjsTower: (pixels: tf.Tensor4D) => tf.Tensor3D;

  constructor(
    readonly config: HfModelConfig,
    readonly decoder: HfDecoder,
    readonly images: ImageEncoder,
    readonly imageTokenId: number,
  ) {
    this.tfjsTower = images.runTower;
  }

  /** The folder's image processor (preprocessor_config.json, or defaults sized to the vision tower). */
  abstract readonly processor: SquareImageProcessor;
  /** [height, width] the processor gives every image. */
  abstract readonly processedSize: readonly [number, number];
  /** The SigLIP tower on ONNX Runtime (models/onnx/hf/siglip-session.ts). */
  abstract ortTower(options: SessionOptions): SiglipEngineTower;

  get imageSize(): number {
    return this.processedSize[1];
  }

  /** Every image at the processor's size, tokensPerImage image tokens each. */
  preprocess(images: readonly RawImage[]): ProcessedImages {
    const pixels = this.processor.preprocess(images); // [n, 3, S, S]
    const per = pixels.shape[1] * pixels.shape[2] * pixels.shape[3];
    return {
      pixels: images.map((_, i) => pixels.data.slice(i * per, (i + 1) * per)),
      tokens: images.map(() => this.images.tokensPerImage),
    };
  }

  encode(pixels: Float32Array): ImageFeatures {
    const [height, width] = this.processedSize;
    return { features: tf.tidy(() => this.images.encode({ data: pixels, shape: [1, 3, height, width] })) };
  }

  prefill(ids: TokenIds, features: ImageFeatures): ImagePrefill {
    const tokenTypeIds = this.tokenTypeIds(ids);
    return {
      embeds: this.embedWithImages(ids, { imageFeatures: features.features }),
      ...(tokenTypeIds ? { tokenTypeIds } : {}),
    };
  }

  setTower(tower: EngineTower | null): void {
    this.images.runTower = tower ? (pixels) => (tower as SiglipEngineTower).forward(pixels) : this.tfjsTower;
  }

  releaseTowerWeights(): void {
    releaseSiglipProjections(this.images.tower);
  }

  /** Token embeddings [B, T, H] (Gemma: after the sqrt(H) scaling) with image-token rows replaced by image features. */
  embedWithImages(ids: TokenIds, images: ImageInput): tf.Tensor3D {
    return tf.tidy(() => {
      const features = 'imageFeatures' in images ? images.imageFeatures : this.images.encode(images.pixelValues);
      return mergeImageFeatures(this.decoder.embed(Array.from(ids)), ids, this.imageTokenId, features);
    });
  }

  /** Token type ids for the decoder (Gemma 3 overrides: 1 on image tokens); none by default. */
  tokenTypeIds(_ids: TokenIds): ArrayLike<number>[] | undefined {
    return undefined;
  }

  /**
   * One forward pass. Images are merged only when given (a prefill); decode steps with a cache are text only. The
   * prompt must hold exactly tokensPerImage image tokens per image (a one-line error otherwise).
   */
  forward(input: VisionForwardInput): ForwardOutput {
    const { images, ...rest } = input;
    if (!images) return this.decoder.forward(rest);
    const embeds = this.embedWithImages(input.ids, images);
    try {
      return this.decoder.forward({
        ...rest,
        inputsEmbeds: embeds,
        tokenTypeIds: rest.tokenTypeIds ?? this.tokenTypeIds(input.ids),
      });
    } finally {
      embeds.dispose();
    }
  }

  /** Prefill with the images, then one token per step from the KV cache (transformers' generate()). */
  generate(
    input: { ids: ArrayLike<number>[]; attentionMask?: ArrayLike<number>[]; images?: ImageInput },
    options: GenerateOptions,
  ): GenerateResult {
    if (!input.images) return generate(this.decoder, input, options);
    const embeds = this.embedWithImages(input.ids, input.images);
    try {
      return generate(
        this.decoder,
        {
          ids: input.ids,
          attentionMask: input.attentionMask,
          inputsEmbeds: embeds,
          tokenTypeIds: this.tokenTypeIds(input.ids),
        },
        options,
      );
    } finally {
      embeds.dispose();
    }
  }

  dispose(): void {
    this.decoder.dispose();
    this.images.dispose();
  }
}
