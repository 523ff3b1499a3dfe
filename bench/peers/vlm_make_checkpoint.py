"""Write a random-weight Idefics3ForConditionalGeneration checkpoint folder of SmolVLM-256M-Instruct's shape, float32,
for the image-step peer (vlm_grpo_step.py against vlm-step.mts):
  text    LlamaForCausalLM-shaped `model.text_model.*`: hidden 576, 30 layers, 9 heads / 3 KV heads, head dim 64,
          intermediate 1536, vocabulary 49,280, rope_theta 100000, RMSNorm eps 1e-5, untied `lm_head.weight`;
  vision  SigLIP `model.vision_model.*`: hidden 768, 12 layers, 12 heads, intermediate 3072, patch 16, image 512
          (1024 patches), gelu-tanh, LayerNorm eps 1e-6;
  connector  pixel shuffle, scale factor 4 (1024 patches x 768 -> 64 tokens x 12,288), `model.connector.modality_projection.proj`
          [576, 12288], no bias;  image_token_id 49190.
These are SmolVLM-256M-Instruct's config.json values (models/hf and bench/hf.bench.ts SMOLVLM_256M_CONFIG; vision
intermediate, layers, eps and activation are Idefics3VisionConfig's defaults, written out here). 256.5 M parameters.
Weights: matrices normal(0, 0.0417) (text, SmolLM2's initializer_range) or normal(0, 0.02) (vision, connector); norm and
LayerNorm weights 1 + 0.1 N(0, 1) and every vision bias 0.02 N(0, 1), so that the equivalence check sees them (all-ones
norms and zero biases, as transformers initialises them, would hide a dropped bias or norm weight).
Written here rather than by metrl's own writer (models/idefics3/random-weights.ts) so that the folder both sides read
comes from neither side's model code: tensor names and layouts are transformers' (fixtures/hf/README.md).
Tokenizer: the real SmolVLM-256M-Instruct tokenizer.json / tokenizer_config.json (its chat template) /
special_tokens_map.json from fixtures/hf/tokenizer-smolvlm; preprocessor_config.json: the Idefics3 image processor at
512 px without splitting (what metrl's processor does: one 512 x 512 image, 64 image tokens).
The prompt (token ids and pixel values) is not written here: metrl's own preprocessing makes it
(vlm-step.mts --write-prompt), and both sides read those files.
Usage: /usr/bin/python3 vlm_make_checkpoint.py OUT_DIR [--text-layers 30] [--vision-layers 12]"""
import argparse
import json
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, '..', '..', '..', 'shared', 'fixtures', 'hf')
sys.path.insert(0, FIX)
from st_io import save_file  # noqa: E402

TEXT = {
    "architectures": ["VLlama3ForCausalLM"], "model_type": "llama", "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 576, "initializer_range": 0.041666666666666664, "intermediate_size": 1536,
    "max_position_embeddings": 8192, "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3,
    "pad_token_id": 2, "rms_norm_eps": 1e-05, "rope_theta": 100000.0, "vocab_size": 49280,
}
VISION = {
    "model_type": "idefics3_vision", "hidden_size": 768, "image_size": 512, "intermediate_size": 3072,
    "num_attention_heads": 12, "num_hidden_layers": 12, "num_channels": 3, "patch_size": 16,
    "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": 1e-06, "initializer_range": 0.02,
}
PREPROCESSOR = {
    "do_convert_rgb": True, "do_image_splitting": False, "do_normalize": True, "do_pad": True, "do_rescale": True,
    "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Idefics3ImageProcessor",
    "image_std": [0.5, 0.5, 0.5], "max_image_size": {"longest_edge": 512}, "processor_class": "Idefics3Processor",
    "resample": 1, "rescale_factor": 0.00392156862745098, "size": {"longest_edge": 512},
}
TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--text-layers', type=int, default=TEXT['num_hidden_layers'])
    ap.add_argument('--vision-layers', type=int, default=VISION['num_hidden_layers'])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t = dict(TEXT, num_hidden_layers=a.text_layers)
    v = dict(VISION, num_hidden_layers=a.vision_layers)
    config = {
        "architectures": ["Idefics3ForConditionalGeneration"], "model_type": "idefics3", "dtype": "float32",
        "image_token_id": 49190, "pad_token_id": 128002, "scale_factor": 4, "tie_word_embeddings": False,
        "vocab_size": 49280, "use_cache": True, "transformers_version": "4.57.0.dev0",
        "text_config": t, "vision_config": v,
    }
    g = torch.Generator().manual_seed(0)
    H, I, hd, V = t['hidden_size'], t['intermediate_size'], t['head_dim'], t['vocab_size']
    nq, nkv = t['num_attention_heads'], t['num_key_value_heads']
    D, DI, P, C = v['hidden_size'], v['intermediate_size'], v['patch_size'], v['num_channels']
    n_patches = (v['image_size'] // P) ** 2
    s = config['scale_factor']

    def rnd(std, *shape):
        return torch.randn(*shape, generator=g) * std

    def norm_w(n):
        return 1 + 0.1 * torch.randn(n, generator=g)

    ts, vs = t['initializer_range'], v['initializer_range']
    W = {}
    tp = 'model.text_model.'
    W[tp + 'embed_tokens.weight'] = rnd(ts, V, H)
    for i in range(t['num_hidden_layers']):
        p = f'{tp}layers.{i}.'
        W[p + 'self_attn.q_proj.weight'] = rnd(ts, nq * hd, H)
        W[p + 'self_attn.k_proj.weight'] = rnd(ts, nkv * hd, H)
        W[p + 'self_attn.v_proj.weight'] = rnd(ts, nkv * hd, H)
        W[p + 'self_attn.o_proj.weight'] = rnd(ts, H, nq * hd)
        W[p + 'mlp.gate_proj.weight'] = rnd(ts, I, H)
        W[p + 'mlp.up_proj.weight'] = rnd(ts, I, H)
        W[p + 'mlp.down_proj.weight'] = rnd(ts, H, I)
        W[p + 'input_layernorm.weight'] = norm_w(H)
        W[p + 'post_attention_layernorm.weight'] = norm_w(H)
    W[tp + 'norm.weight'] = norm_w(H)
    W['lm_head.weight'] = rnd(ts, V, H)
    vp = 'model.vision_model.'
    W[vp + 'embeddings.patch_embedding.weight'] = rnd(vs, D, C, P, P)
    W[vp + 'embeddings.patch_embedding.bias'] = rnd(0.02, D)
    W[vp + 'embeddings.position_embedding.weight'] = rnd(vs, n_patches, D)
    for i in range(v['num_hidden_layers']):
        p = f'{vp}encoder.layers.{i}.'
        for ln in ('layer_norm1', 'layer_norm2'):
            W[p + ln + '.weight'] = norm_w(D)
            W[p + ln + '.bias'] = rnd(0.02, D)
        for proj in ('q_proj', 'k_proj', 'v_proj', 'out_proj'):
            W[p + 'self_attn.' + proj + '.weight'] = rnd(vs, D, D)
            W[p + 'self_attn.' + proj + '.bias'] = rnd(0.02, D)
        W[p + 'mlp.fc1.weight'] = rnd(vs, DI, D)
        W[p + 'mlp.fc1.bias'] = rnd(0.02, DI)
        W[p + 'mlp.fc2.weight'] = rnd(vs, D, DI)
        W[p + 'mlp.fc2.bias'] = rnd(0.02, D)
    W[vp + 'post_layernorm.weight'] = norm_w(D)
    W[vp + 'post_layernorm.bias'] = rnd(0.02, D)
    W['model.connector.modality_projection.proj.weight'] = rnd(vs, H, D * s * s)
    save_file(W, os.path.join(a.out, 'model.safetensors'), {'format': 'pt'})
    json.dump(config, open(os.path.join(a.out, 'config.json'), 'w'), indent=2)
    json.dump({"bos_token_id": 1, "eos_token_id": [2, 49279], "pad_token_id": 2, "transformers_version": "4.57.0.dev0"},
              open(os.path.join(a.out, 'generation_config.json'), 'w'), indent=2)
    json.dump(PREPROCESSOR, open(os.path.join(a.out, 'preprocessor_config.json'), 'w'), indent=2)
    for f in TOKENIZER_FILES:
        shutil.copyfile(os.path.join(FIX, 'tokenizer-smolvlm', f), os.path.join(a.out, f))
    n = sum(x.numel() for x in W.values())
    print(json.dumps({'out': a.out, 'parameters': n, 'text_layers': t['num_hidden_layers'], 'vision_layers': v['num_hidden_layers']}))


if __name__ == '__main__':
    main()
