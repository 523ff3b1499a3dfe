// Qwen2ForCausalLM: Llama's tensor names and network with two differences, both set in
// models/hf/config.ts: q_proj, k_proj and v_proj carry biases (o_proj does not), and small models tie the output
// head to the embeddings (no lm_head.weight in the file; logits = norm(h) · embed_tokensᵀ). Sliding-window layers
// exist only with use_sliding_window (layers from max_window_layers on). Extra tensors:
//   model.layers.{i}.self_attn.q_proj.bias        [nh·d]
//   model.layers.{i}.self_attn.{k,v}_proj.bias    [nkv·d]
import type { TextModelLayout } from '../hf/layout.ts';
import { LLAMA_LAYOUT } from '../llama/language-model.ts';

export const QWEN2_LAYOUT: TextModelLayout = LLAMA_LAYOUT;
