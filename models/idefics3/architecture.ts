// Idefics3ForConditionalGeneration (SmolVLM-256M/500M) in the architecture table (models/registry.ts): a LlamaConfig
// in text_config read by the Llama decoder family, the tensors under `model.text_model.`, a SigLIP tower with pixel
// shuffle and connector, `<image>` placeholders. Both engines.
import type { HfArchitecture } from '../hf/architecture.ts';
import { LLAMA_DECODER } from '../llama/language-model.ts';
import { IDEFICS3_TEXT_LAYOUT } from './language-model.ts';
import { idefics3Placeholders } from './placeholders.ts';

export const idefics3Architecture: HfArchitecture = {
  modelTypes: ['idefics3'],
  classes: [
    {
      name: 'Idefics3ForConditionalGeneration',
      text: 'text_config',
      textModelTypes: ['llama'],
      decoder: LLAMA_DECODER,
      imageTokenId: (raw) => {
        const id = raw.image_token_id ?? raw.image_token_index;
        return typeof id === 'number' ? id : 128257;
      },
      layouts: [IDEFICS3_TEXT_LAYOUT],
      vision: {
        placeholders: idefics3Placeholders,
        load: async (dir, config, decoder, tensors) =>
          (await import('./model.ts')).Idefics3Model.over(dir, config, decoder, tensors),
      },
    },
  ],
  engines: ['ort', 'tfjs'],
};
