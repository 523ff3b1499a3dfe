// Qwen3VLForConditionalGeneration's language model: Qwen3's decoder (q/k norms, its own head_dim, no biases) with the
// interleaved multimodal RoPE (models/layers/mrope.ts) and DeepStack: the features of the vision tower's
// deepstack_visual_indexes blocks are added to the residual stream at the image tokens after the first language-model
// layers (models/hf/decoder.ts ForwardInput.deepstack). Tensors under `model.language_model.` (on disk and in memory),
// the head `lm_head.weight` unless tied.
import type { DecoderFamily } from '../hf/config.ts';
import type { TextModelLayout } from '../hf/layout.ts';

/** Qwen3VLTextConfig's keys and its class defaults (transformers 4.57 configuration_qwen3_vl.py). */
export const QWEN3_VL_DECODER: DecoderFamily = {
  name: 'qwen3_vl',
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
    rope_theta: 5e6,
    attention_bias: false,
    tie_word_embeddings: false,
    bos_token_id: null,
    eos_token_id: null,
    pad_token_id: null,
    max_position_embeddings: 128000,
  },
  attentionBias: 'key',
  mlpBias: false,
  layerTypes: 'full',
  qkNorm: true,
  gemma: false,
  multimodalRope: true,
};

export const QWEN3_VL_LAYOUTS: readonly TextModelLayout[] = [
  {
    weightPrefix: 'model.language_model.',
    lmHead: 'lm_head.weight',
    modulePrefix: 'model.language_model.',
    legacyModulePrefixes: [],
  },
];
