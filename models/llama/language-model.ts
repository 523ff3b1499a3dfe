// LlamaForCausalLM: what a Llama checkpoint holds and sets. The network is the shared decoder of
// models/hf/decoder.ts with the Llama settings of models/hf/config.ts: RMSNorm · w, RoPE (rotate-half, optional
// linear scaling), grouped-query attention, SwiGLU MLP, no biases unless attention_bias / mlp_bias, untied lm_head
// unless tie_word_embeddings. Tensors (H hidden, nh heads, nkv KV heads, d head_dim, I intermediate, V vocab):
//   model.embed_tokens.weight                          [V, H]
//   model.layers.{i}.input_layernorm.weight            [H]
//   model.layers.{i}.self_attn.q_proj.weight           [nh·d, H]   (nn.Linear: [out, in])
//   model.layers.{i}.self_attn.{k,v}_proj.weight       [nkv·d, H]
//   model.layers.{i}.self_attn.o_proj.weight           [H, nh·d]
//   model.layers.{i}.post_attention_layernorm.weight   [H]
//   model.layers.{i}.mlp.{gate,up}_proj.weight         [I, H]
//   model.layers.{i}.mlp.down_proj.weight              [H, I]
//   model.norm.weight                                  [H]
//   lm_head.weight                                     [V, H]      (absent when tied)
import type { DecoderFamily } from '../hf/config.ts';
import type { TextModelLayout } from '../hf/layout.ts';

/** LlamaConfig's keys and its class defaults (transformers 4.57 configuration_llama.py). */
export const LLAMA_DECODER: DecoderFamily = {
  name: 'llama',
  defaults: {
    vocab_size: 32000,
    hidden_size: 4096,
    intermediate_size: 11008,
    num_hidden_layers: 32,
    num_attention_heads: 32,
    hidden_act: 'silu',
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: false,
    bos_token_id: 1,
    eos_token_id: 2,
    pad_token_id: null,
    max_position_embeddings: 2048,
  },
  attentionBias: 'key',
  mlpBias: true,
  layerTypes: 'full',
  qkNorm: false,
  gemma: false,
};

export const LLAMA_LAYOUT: TextModelLayout = {
  weightPrefix: 'model.',
  lmHead: 'lm_head.weight',
  modulePrefix: 'model.',
  legacyModulePrefixes: [],
};

export interface LlamaSizes {
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  intermediateSize: number;
  headDim?: number;
  ropeTheta?: number;
  rmsNormEps?: number;
  tieWordEmbeddings?: boolean;
  bosTokenId?: number;
  eosTokenId?: number;
  maxPositionEmbeddings?: number;
}

/** A LlamaForCausalLM config.json as transformers 4.57 writes it, for checkpoints metrl creates (tests, benchmarks). */
export function llamaConfigJson(s: LlamaSizes): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: s.bosTokenId ?? 1,
    dtype: 'float32',
    eos_token_id: s.eosTokenId ?? 2,
    head_dim: s.headDim ?? s.hiddenSize / s.numHeads,
    hidden_act: 'silu',
    hidden_size: s.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: s.intermediateSize,
    max_position_embeddings: s.maxPositionEmbeddings ?? 2048,
    mlp_bias: false,
    model_type: 'llama',
    num_attention_heads: s.numHeads,
    num_hidden_layers: s.numLayers,
    num_key_value_heads: s.numKvHeads,
    pretraining_tp: 1,
    rms_norm_eps: s.rmsNormEps ?? 1e-5,
    rope_scaling: null,
    rope_theta: s.ropeTheta ?? 10000.0,
    tie_word_embeddings: s.tieWordEmbeddings ?? false,
    transformers_version: '4.57.0',
    use_cache: true,
    vocab_size: s.vocabSize,
  };
}
