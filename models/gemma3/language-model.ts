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
import type { TextModelLayout } from '../hf/layout.ts';

export const GEMMA3_CAUSAL_LAYOUT: TextModelLayout = {
  weightPrefix: 'model.',
  lmHead: 'lm_head.weight',
  modulePrefix: 'model.',
  legacyModulePrefixes: [],
};

/** The conditional model's layout; `hasTensor` tells which on-disk naming the file uses. */
export function gemma3ConditionalLayout(hasTensor: (name: string) => boolean): TextModelLayout {
  const modern = hasTensor('model.language_model.embed_tokens.weight');
  return {
    weightPrefix: modern ? 'model.language_model.' : 'language_model.model.',
    lmHead: modern ? 'lm_head.weight' : 'language_model.lm_head.weight',
    modulePrefix: 'model.language_model.',
    legacyModulePrefixes: ['language_model.model.'],
  };
}
