// Qwen3VLForConditionalGeneration in the architecture table: its decoder keys in text_config, read by the Qwen3-VL
// text family (Qwen3's q/k norms); the interleaved multimodal RoPE and the image token from models/qwen3_vl/config.ts.
import type { HfArchitecture, HfModelClass } from '../hf/architecture.ts';
import { qwenVlPlaceholders } from '../qwen-vl/placeholders.ts';
import { parseQwen3VlSetup } from './config.ts';
import { QWEN3_VL_DECODER, QWEN3_VL_LAYOUTS } from './language-model.ts';

const qwen3VlClass: HfModelClass = {
  name: 'Qwen3VLForConditionalGeneration',
  text: 'text_config',
  textModelTypes: ['qwen3_vl_text'],
  decoder: QWEN3_VL_DECODER,
  adjust: (text, raw, source) => {
    const { mrope, vision } = parseQwen3VlSetup(raw, source);
    return {
      ...text,
      ropeTheta: mrope.theta,
      mrope: { section: mrope.section, layout: mrope.layout },
      deepstackLayers: vision.deepstackVisualIndexes.length,
    };
  },
  imageTokenId: (raw) => parseQwen3VlSetup(raw).imageTokenId,
  layouts: QWEN3_VL_LAYOUTS,
  vision: {
    placeholders: (raw, file, tokenizer) => qwenVlPlaceholders(parseQwen3VlSetup(raw, file), file, tokenizer),
    load: async (dir, config, decoder, tensors) =>
      (await import('./image-side.ts')).loadQwen3VlImageSide(dir, config, decoder, tensors),
  },
};

export const qwen3VlArchitecture: HfArchitecture = {
  modelTypes: ['qwen3_vl'],
  classes: [qwen3VlClass],
  engines: ['ort', 'tfjs'],
};
