// Qwen3ForCausalLM in the architecture table (models/registry.ts): a top-level Qwen3Config read by the Qwen3 decoder
// family (q/k norms, its own head_dim), Llama's tensor names, both engines.
import type { HfArchitecture } from '../hf/architecture.ts';
import { QWEN3_DECODER, QWEN3_LAYOUT } from './language-model.ts';

export const qwen3Architecture: HfArchitecture = {
  modelTypes: ['qwen3'],
  classes: [{ name: 'Qwen3ForCausalLM', text: 'top', decoder: QWEN3_DECODER, layouts: [QWEN3_LAYOUT] }],
  engines: ['ort', 'tfjs'],
};
