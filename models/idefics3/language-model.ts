// Idefics3ForConditionalGeneration's (SmolVLM's) language model: a Llama (text_config is a
// LlamaConfig) whose tensors sit under model.text_model.; the output head lm_head.weight is untied. Image features
// (vision tower + connector, models/idefics3/) replace the rows of image tokens before the first layer.
import type { TextModelLayout } from '../hf/layout.ts';

export const IDEFICS3_TEXT_LAYOUT: TextModelLayout = {
  weightPrefix: 'model.text_model.',
  lmHead: 'lm_head.weight',
  modulePrefix: 'model.text_model.',
  legacyModulePrefixes: [],
};
