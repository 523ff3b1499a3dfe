"""GRPO steps of a Gemma 3 4B-shaped text model in transformers + PEFT, the stack a researcher would reach for first:
the peer of metrl's GPU check (bench/gpu-gemma.ts: `metrl train --device cuda` on a random-weight Gemma 3 4B-shaped
bfloat16 checkpoint, LoRA r 16). Measuring only: it shares no code with metrl and checks no numbers against it.
The model is built from its config (random weights, bfloat16, on the GPU), LoRA r 16 / alpha 32 on q, k, v, o, gate,
up and down (peft), and each step runs the three phases metrl's metrics.jsonl times:
  rollout    model.generate: PROMPTS prompts of P random token ids, G sampled completions each (temperature 1, exactly
             N new tokens), adapters on;
  logprobs   the reference's completion log-probs with the adapter disabled (no grad);
  update     the policy's log-probs with autograd, the GRPO loss (clip 0.2, beta 0.04 k3 KL to the reference, advantages
             from a reward with a spread in every group), backward into the adapters, global-norm clip 1, AdamW 2e-4.
Prints one JSON line: the versions, the shapes, each step's phase seconds (CUDA synchronised), the GPU's peak memory
(torch.cuda.max_memory_allocated, MiB) and the process's peak RSS (GiB). A missing package or GPU is one line on
stderr, exit 2. `--size tiny` (2 layers, hidden 256) runs in seconds: the device check runs it first.
Usage: python3 bench/peers/peft_grpo_step.py --size 4b|1b|tiny [--steps 2] [--prompt-len 128] [--new-tokens 128]
"""
import argparse
import json
import resource
import sys
import time

SIZES = {
    # google/gemma-3-4b-it's text_config (bench/gpu-gemma.ts GEMMA3_4B_TEXT).
    '4b': dict(hidden_size=2560, intermediate_size=10240, num_hidden_layers=34, num_attention_heads=8,
               num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256, sliding_window=1024,
               vocab_size=262208, rope_scaling={'rope_type': 'linear', 'factor': 8.0},
               max_position_embeddings=131072),
    # google/gemma-3-1b-it (bench/gemma-1b.bench.ts GEMMA3_1B_CONFIG).
    '1b': dict(hidden_size=1152, intermediate_size=6912, num_hidden_layers=26, num_attention_heads=4,
               num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256, sliding_window=512,
               vocab_size=262144, rope_scaling=None, max_position_embeddings=32768),
    'tiny': dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=128, query_pre_attn_scalar=128, sliding_window=512,
                 vocab_size=262144, rope_scaling=None, max_position_embeddings=32768),
}
COMMON = dict(rms_norm_eps=1e-6, rope_theta=1000000.0, rope_local_base_freq=10000.0, hidden_activation='gelu_pytorch_tanh',
              attn_logit_softcapping=None, final_logit_softcapping=None, tie_word_embeddings=True, bos_token_id=2,
              eos_token_id=1, pad_token_id=0)
TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']


def fail(message):
    print(f'peft_grpo_step: {message}', file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', choices=sorted(SIZES), default='4b')
    ap.add_argument('--steps', type=int, default=2)
    ap.add_argument('--prompts', type=int, default=4)
    ap.add_argument('--group', type=int, default=8)
    ap.add_argument('--prompt-len', type=int, default=128)
    ap.add_argument('--new-tokens', type=int, default=128)
    ap.add_argument('--seed', type=int, default=0)
    args = ap.parse_args()
    try:
        import torch
        import transformers
        import peft
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    except ImportError as e:
        fail(f'needs torch, transformers (4.50 or later, for Gemma 3) and peft: {e}')
    if not torch.cuda.is_available():
        fail('torch sees no CUDA device')
    torch.manual_seed(args.seed)
    dev = torch.device('cuda')
    config = Gemma3TextConfig(**SIZES[args.size], **COMMON)
    t0 = time.perf_counter()
    # Built in bfloat16 on the GPU directly (a float32 copy of 4B parameters first would take 16 GB and a minute).
    torch.set_default_dtype(torch.bfloat16)
    with dev:
        model = Gemma3ForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    model = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=TARGETS))
    build = time.perf_counter() - t0
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    B, G, P, N = args.prompts, args.group, args.prompt_len, args.new_tokens
    prompts = torch.randint(3, config.vocab_size, (B, P), device=dev)

    def completion_logp(ids, grad):
        """log p(token) of each completion position: [B·G, N]; logits of the N positions only, float32."""
        with torch.set_grad_enabled(grad):
            out = model(input_ids=ids, use_cache=False, logits_to_keep=N + 1)
            logits = out.logits[:, :-1].float()
            return torch.log_softmax(logits, -1).gather(-1, ids[:, -N:].unsqueeze(-1)).squeeze(-1)

    steps = []
    torch.cuda.reset_peak_memory_stats()
    for step in range(1, args.steps + 1):
        times = {}
        torch.cuda.synchronize()
        t = time.perf_counter()
        model.eval()
        with torch.no_grad():
            seqs = model.generate(input_ids=prompts.repeat_interleave(G, 0), attention_mask=torch.ones(B * G, P, dtype=torch.long, device=dev),
                                  do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=N,
                                  min_new_tokens=N, pad_token_id=0)
        torch.cuda.synchronize()
        times['rollout'] = time.perf_counter() - t
        # A reward with a spread in every group: the last token's id modulo 3, halved (metrl's checks use the same).
        rewards = (seqs[:, -1] % 3).float().view(B, G) / 2
        adv = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)).view(-1, 1)
        t = time.perf_counter()
        with model.disable_adapter():
            ref = completion_logp(seqs, grad=False)
        torch.cuda.synchronize()
        times['logprobs'] = time.perf_counter() - t
        t = time.perf_counter()
        model.train()
        logp = completion_logp(seqs, grad=True)
        old = logp.detach()
        ratio = torch.exp(logp - old)
        surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv)
        kl = torch.exp(ref - logp) - (ref - logp) - 1
        loss = -(surrogate - 0.04 * kl).mean(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        torch.cuda.synchronize()
        times['update'] = time.perf_counter() - t
        times['total'] = times['rollout'] + times['logprobs'] + times['update']
        steps.append({'step': step, 'time': times, 'loss': loss.item(), 'completionLength': N})
    print(json.dumps({
        'peer': 'transformers+peft', 'size': args.size, 'device': torch.cuda.get_device_name(0),
        'versions': {'torch': torch.__version__, 'transformers': transformers.__version__, 'peft': peft.__version__},
        'parameters': sum(p.numel() for p in model.parameters()), 'dtype': 'bfloat16', 'lora': {'r': 16, 'alpha': 32},
        'shape': {'prompts': B, 'group': G, 'promptTokens': P, 'newTokens': N}, 'buildSeconds': build, 'steps': steps,
        'gpuPeakMiB': torch.cuda.max_memory_allocated() / 2**20,
        'hostPeakGiB': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }))


if __name__ == '__main__':
    main()
