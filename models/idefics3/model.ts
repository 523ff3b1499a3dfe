// Idefics3ForConditionalGeneration (SmolVLM), whole: the Llama language model
// (models/hf/decoder.ts with models/idefics3/language-model.ts's names) fed token embeddings in which every run of
// `<image>` tokens is replaced by one image's hidden states (vision transformer + pixel shuffle + projection,
// models/idefics3/image-encoder.ts). Attention stays causal over image tokens too. Images come from
// models/idefics3/processor.ts (no splitting: one square image, (S/P/scale)² tokens each).
import { join } from 'node:path';
import type { HfModelConfig, ModelClassLookup } from '../hf/config.ts';
import { readHfConfig } from '../hf/config.ts';
import type { HfDecoder } from '../hf/decoder.ts';
import { loadHfDecoder } from '../hf/load-decoder.ts';
import type { CheckpointTensors } from '../hf/weights.ts';
import { readPreprocessorConfig, tensorLookup, VisionLanguageModel } from '../hf/vision-language-model.ts';
import type { SessionOptions } from '../onnx/session.ts';
import { lazySiglipTower } from '../onnx/hf/siglip-session.ts';
import { IDEFICS3_TEXT_LAYOUT } from './language-model.ts';
import { parseIdefics3VisionSetup } from './vision-config.ts';
import { Idefics3ImageProcessor } from './processor.ts';
import { Idefics3ImageEncoder } from './image-encoder.ts';

export class Idefics3Model extends VisionLanguageModel {
  declare readonly images: Idefics3ImageEncoder;
  /** The folder's image processor (preprocessor_config.json, or defaults sized to the vision tower). */
  processor!: Idefics3ImageProcessor;

  /** Load a checkpoint folder (config.json read with `classes`, the architecture table: models/registry.ts). */
  static load(dir: string, classes: ModelClassLookup): Idefics3Model {
    const config = readHfConfig(dir, classes);
    const { decoder, tensors } = loadHfDecoder(dir, config, [IDEFICS3_TEXT_LAYOUT]);
    try {
      return Idefics3Model.over(dir, config, decoder, tensors);
    } catch (error) {
      decoder.dispose();
      throw error;
    }
  }

  /** The image side over a loaded language model (the architecture's vision loader); the caller disposes on failure. */
  static over(dir: string, config: HfModelConfig, decoder: HfDecoder, tensors: CheckpointTensors): Idefics3Model {
    const setup = parseIdefics3VisionSetup(config.raw, join(dir, 'config.json'));
    const images = Idefics3ImageEncoder.load(tensorLookup(tensors), setup, config.text.hiddenSize, tensors.source);
    const model = new Idefics3Model(config, decoder, images, setup.imageTokenId);
    const pre = readPreprocessorConfig(dir);
    model.processor = new Idefics3ImageProcessor(pre.raw, pre.source, setup.vision.imageSize);
    return model;
  }

  get processedSize(): readonly [number, number] {
    return [this.processor.imageSize, this.processor.imageSize];
  }

  ortTower(options: SessionOptions) {
    return lazySiglipTower(this.images.tower, this.images.towerConfig, options);
  }
}
