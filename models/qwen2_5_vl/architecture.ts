// Qwen2_5_VLForConditionalGeneration in the architecture table: its decoder keys in text_config (transformers 4.57,
// whose file then has `architectures` only there) or at the top level (the Hub's flat files), read by the Qwen2.5-VL
// text family; the chunked multimodal RoPE and the image token from models/qwen2_5_vl/config.ts.
import type { HfArchitecture, HfModelClass } from '../hf/architecture.ts';
import { qwenVlPlaceholders } from '../qwen-vl/placeholders.ts';
import { parseQwen25VlSetup } from './config.ts';
import { QWEN2_5_VL_DECODER, QWEN2_5_VL_LAYOUTS } from './language-model.ts';

const qwen25VlClass: HfModelClass = {
  name: 'Qwen2_5_VLForConditionalGeneration',
  text: 'either',
  textModelTypes: ['qwen2_5_vl_text'],
  decoder: QWEN2_5_VL_DECODER,
  adjust: (text, raw, source) => {
    const { mrope } = parseQwen25VlSetup(raw, source);
    return { ...text, ropeTheta: mrope.theta, mrope: { section: mrope.section, layout: mrope.layout } };
  },
  imageTokenId: (raw) => parseQwen25VlSetup(raw).imageTokenId,
  layouts: QWEN2_5_VL_LAYOUTS,
  vision: {
    placeholders: (raw, file, tokenizer) => qwenVlPlaceholders(parseQwen25VlSetup(raw, file), file, tokenizer),
    load: async (dir, config, decoder, tensors) =>
      (await import('./image-side.ts')).loadQwen25VlImageSide(dir, config, decoder, tensors),
  },
};

export const qwen25VlArchitecture: HfArchitecture = {
  modelTypes: ['qwen2_5_vl'],
  classes: [qwen25VlClass],
  engines: ['ort', 'tfjs'],
};
