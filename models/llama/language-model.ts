// LlamaForCausalLM (models/ layer): what a Llama checkpoint holds and sets. The network is the shared decoder of
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
import type { TextModelLayout } from '../hf/layout.ts';

export const LLAMA_LAYOUT: TextModelLayout = {
  weightPrefix: 'model.',
  lmHead: 'lm_head.weight',
  modulePrefix: 'model.',
  legacyModulePrefixes: [],
};
