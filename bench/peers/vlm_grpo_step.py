"""One GRPO step of an Idefics3 (SmolVLM-256M-shaped) checkpoint on a prompt with one image, in PyTorch eager, phase by
phase: ../shared/peers/hf/hf_grpo_step.py (the text peer; its decoder layer, attention, packed layout and GRPO loss
are imported from it unchanged) extended with ref_models.py's Idefics3 vision side (fixtures/hf: SigLIP tower with
Idefics3's bucketized patch positions, pixel shuffle, connector projection, image-token merge). The work of metrl's
bench/peers/vlm-step.mts, with the same shapes:
  rollout    the vision tower + connector on the prompt's image (frozen, no grad, once per step: its share is reported
             as `vision`), the features merged into the prompt's token embeddings (image-token rows replaced), the prompt
             prefilled once with LoRA on, its KV cache repeated for G = 8 rows, cached decoding, temperature 1 from the
             full softmax, forced to N new tokens (EOS ignored); LoRA un-merged;
  reference  no-grad log-probs of the 8 completions with LoRA off, packed as metrl packs them (one row
             [prompt | c1 | ... | c8], segment mask, positions restart at P), the prompt rows from the step's merged
             embeddings;
  update     the same packed forward with LoRA on and autograd, entropy, GRPO loss (clip 0.2, beta 0.04 k3), backward
             into LoRA A/B (r 16, alpha 32 on the language model's q,k,v,o,gate,up,down), global-norm clip 1, AdamW (2e-4,
             0.9/0.999, 1e-8, no decay).
Inputs: CKPT from vlm_make_checkpoint.py; CKPT/vlm-prompt.json (token ids) and CKPT/pixel_values.f32 ([1, 3, 512, 512]),
written by metrl (vlm-step.mts --write-prompt), so both sides see the same ids and pixel values. Float32 throughout.
Usage: /usr/bin/python3 vlm_grpo_step.py CKPT --threads 1 --lengths 64,128 --steps 1 [--warmup 1] [--checkpointing]
       /usr/bin/python3 vlm_grpo_step.py CKPT --check OUT_DIR        (equivalence data for vlm-check.mts: image features,
                                                                     prompt logits, LoRA loss and gradients)
Prints one JSON line per length in hf_grpo_step.py's schema (summarize.py reads it) plus `vision` per step."""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, '..', '..', '..', 'shared')
sys.path.insert(0, os.path.join(SHARED, 'peers', 'hf'))
sys.path.insert(0, os.path.join(SHARED, 'fixtures', 'hf'))
import hf_grpo_step as T  # noqa: E402  (the text peer: Model.layer/forward, attend, packed, grpo_loss)
import ref_models as R  # noqa: E402
from st_io import load_file, save_file  # noqa: E402

TEXT_PREFIX = 'model.text_model.'
VISION_PREFIX = 'model.vision_model.'
CONNECTOR = 'model.connector.modality_projection.proj.weight'
# Idefics3VisionConfig's class defaults (a config.json may leave them out).
VISION_DEFAULTS = {'num_channels': 3, 'intermediate_size': 3072, 'num_hidden_layers': 12, 'hidden_act': 'gelu_pytorch_tanh', 'layer_norm_eps': 1e-6}


class VlmModel(T.Model):
    """The text peer's Model over the language model's weights (`model.text_model.*` read as `model.*`, the untied
    `lm_head.weight` as the head), plus the vision tower and connector."""

    def __init__(self, ckpt):
        full = json.load(open(os.path.join(ckpt, 'config.json')))
        tc = dict(full['text_config'])
        tc.setdefault('head_dim', tc['hidden_size'] // tc['num_attention_heads'])
        self.cfg = tc
        self.vcfg = dict(VISION_DEFAULTS, **full['vision_config'])
        self.scale_factor = full.get('scale_factor', 2)
        self.image_token_id = full['image_token_id']
        raw, _ = load_file(os.path.join(ckpt, 'model.safetensors'))
        W = {}
        for k, v in raw.items():
            W['model.' + k[len(TEXT_PREFIX):] if k.startswith(TEXT_PREFIX) else k] = v
        self.W = W
        self.L = tc['num_hidden_layers']
        self.H = tc['hidden_size']
        self.hd = tc['head_dim']
        self.eps = tc['rms_norm_eps']
        self.E = W['model.embed_tokens.weight']
        self.head = W.get('lm_head.weight', self.E)
        self.inv_freq = R.rope_inv_freq(self.hd, tc['rope_theta'], torch.float32)
        self.lora = None

    def logits(self, hidden):
        return hidden @ self.head.t()

    def image_features(self, pixel_values):
        """pixel_values [N, 3, S, S] -> connector output [N * tokens, H] (Idefics3Model.get_image_features)."""
        with torch.no_grad():
            P = self.vcfg['patch_size']
            nh, nw = pixel_values.shape[2] // P, pixel_values.shape[3] // P
            pos = R.idefics3_patch_position_ids(nh, nw, self.vcfg['image_size'] // P)
            h = R.vit_forward(self.W, VISION_PREFIX, self.vcfg, pixel_values, position_ids=pos)  # [N, n*n, D]
            x = R.pixel_shuffle(h, self.scale_factor)  # [N, tokens, D*s*s]
            return (x @ self.W[CONNECTOR].t()).reshape(-1, self.H)

    def prompt_embeds(self, ids, feats):
        """Token embeddings [P, H] of the prompt with the image-token rows replaced by the features (masked_scatter)."""
        with torch.no_grad():
            t = torch.tensor([ids])
            return R.merge_image_features(self.E[t], t, self.image_token_id, feats)[0]


def read_prompt(ckpt):
    spec = json.load(open(os.path.join(ckpt, 'vlm-prompt.json')))
    pv = np.fromfile(os.path.join(ckpt, spec['pixelValues']), dtype='<f4').reshape(spec['imageShape'])
    return spec['tokens'], torch.from_numpy(pv.copy())


def rollout(m, prompt_emb, G, n_new, gen, temperature=1.0):
    """hf_grpo_step.rollout with the prompt given as embeddings [P, H] (image rows merged)."""
    with torch.no_grad():
        P = prompt_emb.shape[0]
        nkv = m.cfg['num_key_value_heads']
        cache = [{'k': torch.empty(1, nkv, P, m.hd), 'v': torch.empty(1, nkv, P, m.hd), 'n': 0} for _ in range(m.L)]
        allowed = torch.ones(P, P, dtype=torch.bool).tril()[None]
        h = m.forward(prompt_emb[None], torch.arange(P)[None], allowed, cache)
        logits = m.logits(h[:, -1]).expand(G, -1)
        for c in cache:
            for kv in ('k', 'v'):
                big = torch.empty(G, nkv, P + n_new, m.hd)
                big[:, :, :P] = c[kv]
                c[kv] = big
        out = []
        for t in range(n_new):
            lp = torch.log_softmax(logits / temperature, dim=-1)
            nxt = torch.multinomial(lp.exp(), 1, generator=gen)
            out.append(nxt)
            if t == n_new - 1:
                break
            h = m.forward(m.E[nxt], torch.full((G, 1), P + t), None, cache)
            logits = m.logits(h[:, -1])
        return torch.cat(out, 1)


def completion_logprobs(m, prompt, prompt_emb, comps, use_lora, temperature=1.0, with_entropy=False, checkpointing=False):
    """hf_grpo_step.completion_logprobs with the packed row's prompt part from the merged embeddings."""
    ids, pos, allowed, pred = T.packed(prompt, comps)
    embeds = torch.cat([prompt_emb, m.E[comps.reshape(-1)]])[None]
    h = m.forward(embeds, pos, allowed, use_lora=use_lora, checkpointing=checkpointing)[0]
    z = m.logits(h[pred]) / temperature
    lp = torch.log_softmax(z, -1)
    picked = lp.gather(1, comps.reshape(-1, 1)).view(comps.shape)
    ent = None
    if with_entropy:
        with torch.no_grad():
            ent = -(lp.exp() * lp).sum(-1).view(comps.shape)
    return picked, ent


def step(m, opt, params, prompt, pixels, n_new, gen, G=8, checkpointing=False):
    c0 = time.process_time()
    t0 = time.perf_counter()
    feats = m.image_features(pixels)  # once per step, as metrl's train() encodes each step's new images once
    prompt_emb = m.prompt_embeds(prompt, feats)
    tv = time.perf_counter()
    cv = time.process_time()
    comps = rollout(m, prompt_emb, G, n_new, gen)
    t1 = time.perf_counter()
    c1 = time.process_time()
    rewards = torch.rand(G, generator=gen)
    adv = (rewards - rewards.mean()) / (rewards.std() + 1e-4)
    with torch.no_grad():
        ref, _ = completion_logprobs(m, prompt, prompt_emb, comps, use_lora=False)
    t2 = time.perf_counter()
    c2 = time.process_time()
    opt.zero_grad(set_to_none=True)
    logp, ent = completion_logprobs(m, prompt, prompt_emb, comps, use_lora=True, with_entropy=True, checkpointing=checkpointing)
    loss = T.grpo_loss(logp, logp.detach(), ref, adv)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    t3 = time.perf_counter()
    c3 = time.process_time()
    assert comps.shape == (G, n_new)
    return {'rollout': t1 - t0, 'reference': t2 - t1, 'update': t3 - t2, 'total': t3 - t0, 'vision': tv - t0,
            'cpu': {'rollout': c1 - c0, 'reference': c2 - c1, 'update': c3 - c2, 'total': c3 - c0, 'vision': cv - c0},
            'loss': loss.item(), 'gradNorm': float(norm), 'entropy': float(ent.mean())}


def check(m, prompt, pixels, out):
    """Equivalence data: the image features (connector output) and the logits of prompt + 24 fixed tokens, LoRA off;
    then LoRA with non-zero B on the language model, a group of 3 completions of 8 tokens packed on the image prompt as
    metrl packs them, the loss sum(log p) and its gradients; the adapter written in PEFT layout
    (base_model.model.model.text_model.layers.*, metrl's names)."""
    os.makedirs(out, exist_ok=True)
    g = torch.Generator().manual_seed(11)
    extra = (100 + torch.randint(0, 48000, (24,), generator=g)).tolist()
    seq = prompt + extra
    feats = m.image_features(pixels)
    prompt_emb = m.prompt_embeds(prompt, feats)
    with torch.no_grad():
        emb = torch.cat([prompt_emb, m.E[torch.tensor(extra)]])
        n = len(seq)
        h = m.forward(emb[None], torch.arange(n)[None], torch.ones(n, n, dtype=torch.bool).tril()[None], use_lora=False)
        logits = m.logits(h[0]).contiguous()
    logits.numpy().astype('<f4').tofile(os.path.join(out, 'logits.f32'))
    feats.contiguous().numpy().astype('<f4').tofile(os.path.join(out, 'features.f32'))
    m.attach_lora(seed=5, b_std=0.02)
    comps = 100 + torch.randint(0, 48000, (3, 8), generator=g)
    logp, _ = completion_logprobs(m, prompt, prompt_emb, comps, use_lora=True)
    loss = logp.sum()
    loss.backward()
    names = list(m.lora['weights'].keys())
    metrl_name = lambda k: TEXT_PREFIX + k[len('model.'):]  # noqa: E731  model.layers.* -> model.text_model.layers.*
    os.makedirs(os.path.join(out, 'adapter'), exist_ok=True)
    save_file({f'base_model.model.{metrl_name(k)}': m.lora['weights'][k].detach() for k in names}, os.path.join(out, 'adapter', 'adapter_model.safetensors'), {'format': 'pt'})
    json.dump({'peft_type': 'LORA', 'r': 16, 'lora_alpha': 32,
               'target_modules': r'model\.text_model\.layers\.\d+\.(self_attn|mlp)\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)',
               'task_type': 'CAUSAL_LM',
               'base_model_name_or_path': None, 'use_rslora': False, 'use_dora': False, 'bias': 'none',
               'fan_in_fan_out': False, 'lora_dropout': 0.0, 'inference_mode': True, 'rank_pattern': {}, 'alpha_pattern': {}},
              open(os.path.join(out, 'adapter', 'adapter_config.json'), 'w'))
    save_file({metrl_name(k): m.lora['weights'][k].grad for k in names}, os.path.join(out, 'grads.safetensors'))
    json.dump({'sequence': seq, 'featuresShape': list(feats.shape), 'logitsShape': list(logits.shape), 'comps': comps.tolist(), 'loss': loss.item(), 'logp': logp.detach().tolist()},
              open(os.path.join(out, 'check.json'), 'w'))
    print(json.dumps({'check': out, 'tokens': len(seq), 'imageTokens': int(sum(1 for t in prompt if t == m.image_token_id)), 'maxAbsLogit': float(logits.abs().max()), 'loss': loss.item()}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('ckpt')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--lengths', default='64,128')
    ap.add_argument('--steps', type=int, default=1)
    ap.add_argument('--warmup', type=int, default=1)
    ap.add_argument('--checkpointing', action='store_true')
    ap.add_argument('--check')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t = time.perf_counter()
    m = VlmModel(a.ckpt)
    load_s = time.perf_counter() - t
    prompt, pixels = read_prompt(a.ckpt)
    if a.check:
        return check(m, prompt, pixels, a.check)
    params = m.attach_lora(seed=0)
    opt = torch.optim.AdamW(params, lr=2e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    gen = torch.Generator().manual_seed(1)
    for n in [int(x) for x in a.lengths.split(',')]:
        for _ in range(a.warmup):
            step(m, opt, params, prompt, pixels, min(n, 8), gen, checkpointing=a.checkpointing)
        cpu0 = time.process_time()
        steps = [step(m, opt, params, prompt, pixels, n, gen, checkpointing=a.checkpointing) for _ in range(a.steps)]
        cpu = (time.process_time() - cpu0) / a.steps
        med = {k: statistics.median(s[k] for s in steps) for k in ('rollout', 'reference', 'update', 'total', 'vision')}
        P, G = len(prompt), 8
        print(json.dumps({
            'side': 'torch', 'engine': 'eager' + (' +checkpointing' if a.checkpointing else ''), 'threads': a.threads, 'completionTokens': n,
            'promptTokens': P, 'imageTokens': int(sum(1 for x in prompt if x == m.image_token_id)), 'group': G, 'steps': steps, 'median': med,
            'tokensPerSecond': {'rollout': G * n / med['rollout'], 'reference': (P + G * n) / med['reference'], 'update': (P + G * n) / med['update']},
            'cpuSecondsPerStep': cpu, 'loadSeconds': load_s, 'peakRssMB': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            'loadavg': open('/proc/loadavg').read().split()[:3], 'torch': torch.__version__, 'numThreads': torch.get_num_threads(),
        }), flush=True)


if __name__ == '__main__':
    main()
