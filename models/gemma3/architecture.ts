// Gemma 3 in the architecture table (models/registry.ts): Gemma3ForCausalLM (model_type gemma3_text, a top-level
// Gemma3TextConfig) and Gemma3ForConditionalGeneration (model_type gemma3: the same decoder in text_config, its
// tensors under either of two prefixes, a SigLIP tower and projector, `<start_of_image>` placeholders). Both engines.
import type { HfArchitecture } from '../hf/architecture.ts';
import { GEMMA3_CAUSAL_LAYOUT, GEMMA3_CONDITIONAL_LAYOUTS, GEMMA3_TEXT_DECODER } from './language-model.ts';
import { gemma3Placeholders } from './placeholders.ts';

/** image_token_index (written as the JSON key; image_token_id is its alias), Gemma3Config's default otherwise. */
const imageTokenId = (raw: Record<string, unknown>): number => {
  const id = raw.image_token_id ?? raw.image_token_index;
  return typeof id === 'number' ? id : 262144;
};

export const gemma3Architecture: HfArchitecture = {
  modelTypes: ['gemma3_text', 'gemma3'],
  classes: [
    { name: 'Gemma3ForCausalLM', text: 'top', decoder: GEMMA3_TEXT_DECODER, layouts: [GEMMA3_CAUSAL_LAYOUT] },
    {
      name: 'Gemma3ForConditionalGeneration',
      text: 'text_config',
      textModelTypes: ['gemma3_text'],
      decoder: GEMMA3_TEXT_DECODER,
      // Gemma3ForConditionalGeneration (transformers 4.57) does not apply final_logit_softcapping; only the CausalLM does.
      adjust: (text) => ({ ...text, finalLogitSoftcap: null }),
      imageTokenId,
      layouts: GEMMA3_CONDITIONAL_LAYOUTS,
      vision: {
        placeholders: gemma3Placeholders,
        load: async (dir, config, decoder, tensors) =>
          (await import('./model.ts')).Gemma3Model.over(dir, config, decoder, tensors),
      },
    },
  ],
  engines: ['ort', 'tfjs'],
};
