// Qwen2.5-VL's image side over its loaded language model: the processor of preprocessor_config.json (checked against
// the tower's patching), the window-attention tower of vision-tower.ts on tfjs, no DeepStack.
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { HfModelConfig } from '../hf/config.ts';
import type { HfDecoder } from '../hf/decoder.ts';
import { readPreprocessorConfig, tensorLookup } from '../hf/vision-language-model.ts';
import type { CheckpointTensors } from '../hf/weights.ts';
import { QwenVisionOrtTower } from '../onnx/hf/qwen-vl-vision-session.ts';
import { QwenVlImageModel } from '../qwen-vl/image-model.ts';
import { QwenVlImageProcessor } from '../qwen-vl/image-processor.ts';
import { parseQwen25VlSetup } from './config.ts';
import { qwen25VisionForward } from './vision-tower.ts';
import { loadQwen25VisionWeights } from './vision-weights.ts';

export function loadQwen25VlImageSide(
  dir: string,
  config: HfModelConfig,
  decoder: HfDecoder,
  tensors: CheckpointTensors,
): QwenVlImageModel {
  const setup = parseQwen25VlSetup(config.raw, join(dir, 'config.json'));
  const pre = readPreprocessorConfig(dir);
  const processor = new QwenVlImageProcessor(pre.raw, pre.source, setup.vision);
  const weights = loadQwen25VisionWeights(tensorLookup(tensors), setup.vision, tensors.source);
  return new QwenVlImageModel({
    decoder,
    processor,
    tower: (pixels, grids) => ({ features: qwen25VisionForward(weights, setup.vision, pixels, grids), deepstack: [] }),
    ortTower: (options) => {
      const tower = QwenVisionOrtTower.qwen25(weights, setup.vision, options);
      return { forward: (pixels, grids) => tower.forward(pixels, grids), dispose: () => tower.dispose() };
    },
    disposeTower: () => tf.dispose(weights as unknown as tf.TensorContainer),
    imageTokenId: setup.imageTokenId,
    visionStartTokenId: setup.visionStartTokenId,
  });
}
