// Qwen2ForCausalLM in the architecture table (models/registry.ts): a top-level Qwen2Config read by the Qwen2 decoder
// family (q/k/v biases), Llama's tensor names, both engines.
import type { HfArchitecture } from '../hf/architecture.ts';
import { QWEN2_DECODER, QWEN2_LAYOUT } from './language-model.ts';

export const qwen2Architecture: HfArchitecture = {
  modelTypes: ['qwen2'],
  classes: [{ name: 'Qwen2ForCausalLM', text: 'top', decoder: QWEN2_DECODER, layouts: [QWEN2_LAYOUT] }],
  engines: ['ort', 'tfjs'],
};
