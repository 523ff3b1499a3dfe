// Gemma 3 images -> the rows that replace `<image_soft_token>` tokens: the SigLIP tower (models/vision/siglip.ts) then
// the multi-modal projector (models/gemma3/projector.ts). Independent of the
// language model: models/gemma3/model.ts merges these rows into the (already sqrt(H)-scaled) token embeddings.
import * as tf from '@tensorflow/tfjs';
import type { PixelValues } from '../hf/pixel-values.ts';
import type { Gemma3VisionSetup } from './vision-config.ts';
import {
  disposeSiglip,
  loadSiglipWeights,
  SIGLIP_PREFIX,
  siglipForward,
  type SiglipWeights,
  type TensorLookup,
} from '../vision/siglip.ts';
import {
  GEMMA3_PROJECTOR_PREFIX,
  gemma3Project,
  loadGemma3Projector,
  type Gemma3ProjectorWeights,
} from './projector.ts';

export class Gemma3ImageEncoder {
  runTower = (pixels: tf.Tensor4D): tf.Tensor3D => siglipForward(this.tower, this.setup.vision, pixels);

  private constructor(
    readonly setup: Gemma3VisionSetup,
    readonly tower: SiglipWeights,
    readonly projector: Gemma3ProjectorWeights,
  ) {}

  /**
   * Read `vision_tower.vision_model.*` and `multi_modal_projector.*` (the legacy names transformers 4.57 still writes,
   * as real google/gemma-3 files do), or `model.vision_tower.…` / `model.multi_modal_projector.…` when `hasTensor` says
   * the file uses the in-memory names. `textHidden` is the language model's hidden size.
   */
  static load(
    get: TensorLookup,
    setup: Gemma3VisionSetup,
    textHidden: number,
    source = 'model.safetensors',
    hasTensor?: (name: string) => boolean,
  ): Gemma3ImageEncoder {
    const modern = hasTensor?.(`model.${SIGLIP_PREFIX.gemma3}embeddings.patch_embedding.weight`) ?? false;
    const lead = modern ? 'model.' : '';
    const tower = loadSiglipWeights(get, lead + SIGLIP_PREFIX.gemma3, setup.vision, source);
    return new Gemma3ImageEncoder(
      setup,
      tower,
      loadGemma3Projector(get, setup.vision.hiddenSize, textHidden, source, lead + GEMMA3_PROJECTOR_PREFIX),
    );
  }

  get towerConfig() {
    return this.setup.vision;
  }

  get tokensPerImage(): number {
    return this.setup.mmTokensPerImage;
  }

  /** Pixel values [n, 3, S, S] -> image features [n · mm_tokens_per_image, text hidden], image 0's rows first. */
  encode(pixels: PixelValues | tf.Tensor4D): tf.Tensor2D {
    return tf.tidy(() => {
      const input = pixels instanceof tf.Tensor ? pixels : tf.tensor4d(pixels.data, pixels.shape);
      const vision = this.runTower(input);
      const features = gemma3Project(
        this.projector,
        vision,
        this.setup.mmTokensPerImage,
        this.setup.vision.layerNormEps,
      ); // [n, tokens, text hidden]
      const [n, t, d] = features.shape;
      return tf.reshape(features, [n * t, d]) as tf.Tensor2D;
    });
  }

  dispose(): void {
    disposeSiglip(this.tower);
    tf.dispose([this.projector.norm, this.projector.projection]);
  }
}
