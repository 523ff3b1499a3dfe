// Idefics3ForConditionalGeneration (SmolVLM), whole: the Llama language model
// (models/hf/decoder.ts with models/idefics3/language-model.ts's names) fed token embeddings in which every run of
// `<image>` tokens is replaced by one image's hidden states (vision transformer + pixel shuffle + projection,
// models/idefics3/image-encoder.ts). Attention stays causal over image tokens too. Images come from
// models/idefics3/processor.ts (no splitting: one square image, (S/P/scale)² tokens each).
import { join } from 'node:path';
import { loadHfDecoder } from '../hf/load-decoder.ts';
import { parseIdefics3VisionSetup, type Idefics3VisionSetup } from '../hf/vision-config.ts';
import { readPreprocessorConfig, tensorLookup, VisionLanguageModel } from '../hf/vision-language-model.ts';
import { Idefics3ImageProcessor } from './processor.ts';
import { Idefics3ImageEncoder } from './image-encoder.ts';

export class Idefics3Model extends VisionLanguageModel {
  declare readonly images: Idefics3ImageEncoder;
  /** The folder's image processor (preprocessor_config.json, or defaults sized to the vision tower). */
  processor!: Idefics3ImageProcessor;

  /** Load a checkpoint folder (config.json, model.safetensors or shards) through the shared HF loader. */
  static load(dir: string): Idefics3Model {
    const { config, decoder, tensors } = loadHfDecoder(dir);
    try {
      const setup: Idefics3VisionSetup = parseIdefics3VisionSetup(config.raw, join(dir, 'config.json'));
      const images = Idefics3ImageEncoder.load(tensorLookup(tensors), setup, config.text.hiddenSize, tensors.source);
      const model = new Idefics3Model(config, decoder, images, setup.imageTokenId);
      const pre = readPreprocessorConfig(dir);
      model.processor = new Idefics3ImageProcessor(pre.raw, pre.source, setup.vision.imageSize);
      return model;
    } catch (error) {
      decoder.dispose();
      throw error;
    }
  }
}
