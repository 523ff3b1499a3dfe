// Idefics3 (SmolVLM) images -> the rows that replace `<image>` tokens: the vision transformer (models/vision/siglip.ts)
// then the pixel-shuffle connector (models/idefics3/connector.ts). Independent
// of the language model: models/idefics3/model.ts merges these rows into the token embeddings.
import * as tf from '@tensorflow/tfjs';
import type { PixelValues } from '../hf/pixel-values.ts';
import { idefics3ImageSeqLen, type Idefics3VisionSetup } from './vision-config.ts';
import {
  disposeSiglip,
  loadSiglipWeights,
  SIGLIP_PREFIX,
  siglipForward,
  type SiglipWeights,
  type TensorLookup,
} from '../vision/siglip.ts';
import { idefics3Connect, loadIdefics3Connector, type Idefics3ConnectorWeights } from './connector.ts';

export class Idefics3ImageEncoder {
  runTower = (pixels: tf.Tensor4D): tf.Tensor3D => siglipForward(this.tower, this.setup.vision, pixels);

  private constructor(
    readonly setup: Idefics3VisionSetup,
    readonly tower: SiglipWeights,
    readonly connector: Idefics3ConnectorWeights,
  ) {}

  /** Read `model.vision_model.*` and `model.connector.*`; `textHidden` is the language model's hidden size. */
  static load(
    get: TensorLookup,
    setup: Idefics3VisionSetup,
    textHidden: number,
    source = 'model.safetensors',
  ): Idefics3ImageEncoder {
    const tower = loadSiglipWeights(get, SIGLIP_PREFIX.idefics3, setup.vision, source);
    return new Idefics3ImageEncoder(
      setup,
      tower,
      loadIdefics3Connector(get, setup.vision.hiddenSize, setup.scaleFactor, textHidden, source),
    );
  }

  get towerConfig() {
    return this.setup.vision;
  }

  /** `<image>` tokens per image: (image_size / patch_size / scale_factor)². */
  get tokensPerImage(): number {
    return idefics3ImageSeqLen(this.setup);
  }

  /** Pixel values [n, 3, S, S] -> image hidden states [n · tokensPerImage, text hidden], image 0's rows first. */
  encode(pixels: PixelValues | tf.Tensor4D): tf.Tensor2D {
    return tf.tidy(() => {
      const input = pixels instanceof tf.Tensor ? pixels : tf.tensor4d(pixels.data, pixels.shape);
      const features = idefics3Connect(this.connector, this.runTower(input), this.setup.scaleFactor); // [n, tokens, text hidden]
      const [n, t, d] = features.shape;
      return tf.reshape(features, [n * t, d]) as tf.Tensor2D;
    });
  }

  dispose(): void {
    disposeSiglip(this.tower);
    this.connector.projection.dispose();
  }
}
