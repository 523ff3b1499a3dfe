// Qwen3ForCausalLM: Qwen2's tensor names and network with three differences, all set by the Qwen3 decoder family
// below: per-head RMSNorm of q and k over head_dim (x̂ · w, Qwen2's norm style) after the projections and before RoPE,
// head_dim read from config.json (4 × 16 = 64 heads' width over a hidden size of 48 in the fixture: never
// hidden / heads), and no biases unless attention_bias (then on q, k, v and o alike). Extra tensors:
//   model.layers.{i}.self_attn.{q,k}_norm.weight   [d]
import type { DecoderFamily } from '../hf/config.ts';
import type { TextModelLayout } from '../hf/layout.ts';
import { LLAMA_LAYOUT } from '../llama/language-model.ts';

export const QWEN3_LAYOUT: TextModelLayout = LLAMA_LAYOUT;

/** Qwen3Config's keys and its class defaults (transformers 4.57 configuration_qwen3.py). */
export const QWEN3_DECODER: DecoderFamily = {
  name: 'qwen3',
  defaults: {
    vocab_size: 151936,
    hidden_size: 4096,
    intermediate_size: 22016,
    num_hidden_layers: 32,
    num_attention_heads: 32,
    num_key_value_heads: 32,
    head_dim: 128,
    hidden_act: 'silu',
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    attention_bias: false,
    tie_word_embeddings: false,
    bos_token_id: null,
    eos_token_id: null,
    pad_token_id: null,
    use_sliding_window: false,
    sliding_window: 4096,
    max_window_layers: 28,
    max_position_embeddings: 32768,
  },
  attentionBias: 'key',
  mlpBias: false,
  layerTypes: 'max_window_layers',
  qkNorm: true,
  gemma: false,
};
