// Gemma 3's language model, alone (Gemma3ForCausalLM, model_type gemma3_text) or inside
// Gemma3ForConditionalGeneration. The shared decoder with the Gemma settings of models/hf/config.ts:
//   - token embeddings × sqrt(H) (an fp32 constant; image features replace image-token rows after the scaling),
//   - RMSNorm · (1 + w) everywhere, and "sandwich" norms: attention and MLP outputs are normalised before the
//     residual add (post_attention_layernorm, post_feedforward_layernorm; pre_feedforward_layernorm before the MLP),
//   - q_norm / k_norm over head_dim before RoPE; attention scale query_pre_attn_scalar^-0.5,
//   - sliding layers (window `sliding_window`, RoPE base rope_local_base_freq, no scaling) and full layers (rope_theta
//     with rope_scaling), per layer_types, GeGLU (tanh GELU) MLP, tied output head.
// Extra tensors beside Llama's (d = head_dim, which need not equal H / nh):
//   <prefix>layers.{i}.self_attn.{q,k}_norm.weight                 [d]
//   <prefix>layers.{i}.{pre,post}_feedforward_layernorm.weight     [H]
// On-disk prefix: `model.` (CausalLM); `language_model.model.` for the conditional model, the legacy names that
// transformers 4.57 save_pretrained still writes (in memory it calls them `model.language_model.`, as PEFT keys do).
import type { DecoderFamily } from '../hf/config.ts';
import type { TextModelLayout } from '../hf/layout.ts';

/** Gemma3TextConfig's keys and its class defaults (transformers 4.57 configuration_gemma3.py). */
export const GEMMA3_TEXT_DECODER: DecoderFamily = {
  name: 'gemma3',
  defaults: {
    vocab_size: 262208,
    hidden_size: 2304,
    intermediate_size: 9216,
    num_hidden_layers: 26,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    head_dim: 256,
    hidden_activation: 'gelu_pytorch_tanh',
    rms_norm_eps: 1e-6,
    rope_theta: 1_000_000,
    rope_local_base_freq: 10_000,
    attention_bias: false,
    query_pre_attn_scalar: 256,
    sliding_window: 4096,
    sliding_window_pattern: 6,
    tie_word_embeddings: true,
    bos_token_id: 2,
    eos_token_id: 1,
    pad_token_id: 0,
    max_position_embeddings: 131072,
  },
  attentionBias: 'key',
  mlpBias: false,
  layerTypes: 'sliding_window_pattern',
  qkNorm: true,
  gemma: true,
};

export const GEMMA3_CAUSAL_LAYOUT: TextModelLayout = {
  weightPrefix: 'model.',
  lmHead: 'lm_head.weight',
  modulePrefix: 'model.',
  legacyModulePrefixes: [],
};

/**
 * The conditional model's layouts: the in-memory names (model.language_model.…) that some files carry, then the
 * legacy ones transformers 4.57 save_pretrained writes and real google/gemma-3 files have (language_model.model.…).
 */
export const GEMMA3_CONDITIONAL_LAYOUTS: readonly TextModelLayout[] = [
  {
    weightPrefix: 'model.language_model.',
    lmHead: 'lm_head.weight',
    modulePrefix: 'model.language_model.',
    legacyModulePrefixes: ['language_model.model.'],
  },
  {
    weightPrefix: 'language_model.model.',
    lmHead: 'language_model.lm_head.weight',
    modulePrefix: 'model.language_model.',
    legacyModulePrefixes: ['language_model.model.'],
  },
];
