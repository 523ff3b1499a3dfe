// Qwen2_5_VLForConditionalGeneration's language model: Qwen2's decoder (q/k/v biases, o none) with the chunked
// multimodal RoPE (models/layers/mrope.ts; mrope_section from rope_scaling). On disk, as transformers 4.57 and v5
// save it and the Hub's checkpoints have it, the decoder sits under `model.` and the head is `lm_head.weight`; in
// memory (transformers >= 4.52, which PEFT adapter keys name) under `model.language_model.`. The newer on-disk layout
// (`model.language_model.*`) is read too.
import type { DecoderFamily } from '../hf/config.ts';
import type { TextModelLayout } from '../hf/layout.ts';

/** Qwen2_5_VLTextConfig's keys and its class defaults (transformers 4.57 configuration_qwen2_5_vl.py). */
export const QWEN2_5_VL_DECODER: DecoderFamily = {
  name: 'qwen2_5_vl',
  defaults: {
    vocab_size: 152064,
    hidden_size: 8192,
    intermediate_size: 29568,
    num_hidden_layers: 80,
    num_attention_heads: 64,
    num_key_value_heads: 8,
    hidden_act: 'silu',
    rms_norm_eps: 1e-5,
    rope_theta: 1e6,
    tie_word_embeddings: false,
    bos_token_id: null,
    eos_token_id: null,
    pad_token_id: null,
    use_sliding_window: false,
    sliding_window: 4096,
    max_window_layers: 80,
    max_position_embeddings: 32768,
  },
  attentionBias: 'qkv',
  mlpBias: false,
  layerTypes: 'max_window_layers',
  qkNorm: false,
  gemma: false,
  multimodalRope: true,
};

export const QWEN2_5_VL_LAYOUTS: readonly TextModelLayout[] = [
  {
    weightPrefix: 'model.',
    lmHead: 'lm_head.weight',
    modulePrefix: 'model.language_model.',
    legacyModulePrefixes: ['model.'],
  },
  {
    weightPrefix: 'model.language_model.',
    lmHead: 'lm_head.weight',
    modulePrefix: 'model.language_model.',
    legacyModulePrefixes: ['model.'],
  },
];
