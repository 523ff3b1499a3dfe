// Gemma3ForConditionalGeneration, whole: the Gemma 3 language model
// (models/hf/decoder.ts with models/gemma3/language-model.ts's names) fed sqrt(H)-scaled token embeddings in which
// every run of `<image_soft_token>` is replaced by one image's projected SigLIP features (models/gemma3/image-encoder.ts;
// the features are not scaled). As Gemma3Processor returns token_type_ids by default, the prefill lets the image
// tokens of one image attend to each other in both directions, in every layer and past the sliding window
// (`bidirectionalImages`, default true; false gives the plain causal/sliding mask). Decode steps are text only.
import { join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { readHfConfig, type HfModelConfig, type ModelClassLookup } from '../hf/config.ts';
import type { HfDecoder } from '../hf/decoder.ts';
import { loadHfDecoder } from '../hf/load-decoder.ts';
import { imageTokenTypeIds, type TokenIds } from '../hf/image-merge.ts';
import type { CheckpointTensors } from '../hf/weights.ts';
import { readPreprocessorConfig, tensorLookup, VisionLanguageModel } from '../hf/vision-language-model.ts';
import type { SessionOptions } from '../onnx/session.ts';
import { lazySiglipTower } from '../onnx/hf/siglip-session.ts';
import { GEMMA3_CONDITIONAL_LAYOUTS } from './language-model.ts';
import { parseGemma3VisionSetup, type Gemma3VisionSetup } from './vision-config.ts';
import { Gemma3ImageProcessor } from './processor.ts';
import { Gemma3ImageEncoder } from './image-encoder.ts';

export class Gemma3Model extends VisionLanguageModel {
  declare readonly images: Gemma3ImageEncoder;
  /** Give image tokens the bidirectional block (token_type_ids = 1 on them), as Gemma3Processor's output does. */
  bidirectionalImages = true;
  setup!: Gemma3VisionSetup;
  /** The folder's image processor (preprocessor_config.json, or defaults sized to the vision tower). */
  processor!: Gemma3ImageProcessor;

  /** Load a checkpoint folder (config.json read with `classes`, the architecture table: models/registry.ts). */
  static load(dir: string, classes: ModelClassLookup): Gemma3Model {
    const config = readHfConfig(dir, classes);
    const { decoder, tensors } = loadHfDecoder(dir, config, GEMMA3_CONDITIONAL_LAYOUTS);
    try {
      return Gemma3Model.over(dir, config, decoder, tensors);
    } catch (error) {
      decoder.dispose();
      throw error;
    }
  }

  /** The image side over a loaded language model (the architecture's vision loader); the caller disposes on failure. */
  static over(dir: string, config: HfModelConfig, decoder: HfDecoder, tensors: CheckpointTensors): Gemma3Model {
    const setup = parseGemma3VisionSetup(config.raw, join(dir, 'config.json'));
    const images = Gemma3ImageEncoder.load(tensorLookup(tensors), setup, config.text.hiddenSize, tensors.source, (n) =>
      tensors.has(n),
    );
    const model = new Gemma3Model(config, decoder, images, setup.imageTokenId);
    model.setup = setup;
    const pre = readPreprocessorConfig(dir);
    model.processor = new Gemma3ImageProcessor(pre.raw, { defaultSize: setup.vision.imageSize, source: pre.source });
    const size = setup.vision.imageSize;
    if (model.processor.config.do_resize && (model.processor.height !== size || model.processor.width !== size)) {
      throw new UserError(
        `${pre.source}: size ${model.processor.height}x${model.processor.width} differs from the vision tower's image_size ${size}`,
      );
    }
    return model;
  }

  get processedSize(): readonly [number, number] {
    return [this.processor.height, this.processor.width];
  }

  ortTower(options: SessionOptions) {
    return lazySiglipTower(this.images.tower, this.images.towerConfig, options);
  }

  override tokenTypeIds(ids: TokenIds): Int32Array[] | undefined {
    return this.bidirectionalImages ? imageTokenTypeIds(ids, this.imageTokenId) : undefined;
  }
}
