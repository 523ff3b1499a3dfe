// LlamaForCausalLM in the architecture table (models/registry.ts): a top-level LlamaConfig read by the Llama decoder
// family, the tensors under `model.`, both engines.
import type { HfArchitecture } from '../hf/architecture.ts';
import { LLAMA_DECODER, LLAMA_LAYOUT } from './language-model.ts';

export const llamaArchitecture: HfArchitecture = {
  modelTypes: ['llama'],
  classes: [{ name: 'LlamaForCausalLM', text: 'top', decoder: LLAMA_DECODER, layouts: [LLAMA_LAYOUT] }],
  engines: ['ort', 'tfjs'],
};
