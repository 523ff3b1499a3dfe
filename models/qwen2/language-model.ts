// Qwen2ForCausalLM: Llama's tensor names and network with two differences, both set in
// models/hf/config.ts: q_proj, k_proj and v_proj carry biases (o_proj does not), and small models tie the output
// head to the embeddings (no lm_head.weight in the file; logits = norm(h) · embed_tokensᵀ). Sliding-window layers
// exist only with use_sliding_window (layers from max_window_layers on). Extra tensors:
//   model.layers.{i}.self_attn.q_proj.bias        [nh·d]
//   model.layers.{i}.self_attn.{k,v}_proj.bias    [nkv·d]
import type { DecoderFamily } from '../hf/config.ts';
import type { TextModelLayout } from '../hf/layout.ts';
import { LLAMA_LAYOUT } from '../llama/language-model.ts';

export const QWEN2_LAYOUT: TextModelLayout = LLAMA_LAYOUT;

/** Qwen2Config's keys and its class defaults (transformers 4.57 configuration_qwen2.py). */
export const QWEN2_DECODER: DecoderFamily = {
  name: 'qwen2',
  defaults: {
    vocab_size: 151936,
    hidden_size: 4096,
    intermediate_size: 22016,
    num_hidden_layers: 32,
    num_attention_heads: 32,
    hidden_act: 'silu',
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: false,
    bos_token_id: null,
    eos_token_id: null,
    pad_token_id: null,
    use_sliding_window: false,
    sliding_window: 4096,
    max_window_layers: 28,
    max_position_embeddings: 32768,
  },
  attentionBias: 'qkv',
  mlpBias: false,
  layerTypes: 'max_window_layers',
  qkNorm: false,
  gemma: false,
};
