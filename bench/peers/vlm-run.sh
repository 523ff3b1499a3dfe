#!/usr/bin/env bash
# One GRPO step on a SmolVLM-256M-shaped image prompt (Idefics3: SigLIP 768 x 12 layers at 512 px, pixel shuffle 4 → 64
# image tokens, SmolLM2-135M-shaped language model, vocabulary 49,280; 256.5 M parameters, float32), metrl against
# PyTorch eager, interleaved on one machine: the image counterpart of hf-run.sh.
#   1. once: the random-weight checkpoint (vlm_make_checkpoint.py, 1.0 GB, outside the repo) and the prompt both sides
#      read (vlm-step.mts --write-prompt: metrl's zero-shot chess prompt with one board image, 249 tokens of which 64
#      image tokens, and its [1, 3, 512, 512] pixel values);
#   2. the processes in ORDER, each timing one GRPO step per length (G = 8, forced to each N; vision tower + connector
#      once per step inside the rollout, reported as `vision`): vlm_grpo_step.py (torch, --threads) and vlm-step.mts
#      (metrl, --engine tfjs | ort --threads), one JSON line per length into $OUT/results.jsonl;
#   3. the equivalence check on the same checkpoint (vlm_grpo_step.py --check, vlm-check.mts): image features, the
#      logits of the prompt + 24 tokens, and a LoRA loss on the image prompt with its gradients (torch's adapter, B
#      non-zero), metrl tfjs and ORT against torch, into $OUT/check.json (`ok`: within the fixtures' 1e-4).
#
# Run from the metrl checkout (../shared beside it; Debian's /usr/bin/python3 with python3-torch):
#   OUT=${TMPDIR:-/tmp}/vlmpeer/results bash bench/peers/vlm-run.sh
#   /usr/bin/python3 bench/peers/vlm_summarize.py ${TMPDIR:-/tmp}/vlmpeer/results/results.jsonl
# How long: with ORDER="torch:1 ort:1 torch:2 ort:2" and the defaults, 10 min on the quiet 2-core development machine
# (2026-11-29: torch 1 thread 3.7 min, ort 2.0, torch 2 threads 2.2, ort 1.6), plus about 1 min to write the checkpoint
# and prompt once and 3 min for the full-size check. Peak RSS: torch up to 7.1 GiB at N 128, metrl ORT 3.5 GiB. The
# tfjs side has not been run at full size (its WASM heap stops at 4 GB).
# Env: LENGTHS (default 64,128), CKPT (default ${TMPDIR:-/tmp}/vlmpeer/smolvlm-256m), ORDER (default
#      "tfjs torch:1 ort:1 torch:2 ort:2"), STEPS (measured steps per process and length, default 1), WARMUP (warm-up
#      steps at min(N, 8) tokens per length, both sides, default 1), SKIP_BENCH=1, SKIP_CHECK=1.
#      CHECK_CKPT: the checkpoint the check runs on (default CKPT). TEXT_LAYERS / VISION_LAYERS: a smaller checkpoint
#      (only when CKPT does not exist yet).
# The quick correctness run (a 2 + 2-layer checkpoint, ~2 min; not for figures):
#   CKPT=/tmp/vlmpeer/tiny TEXT_LAYERS=2 VISION_LAYERS=2 LENGTHS=8 OUT=/tmp/vlmpeer/tiny-results bash bench/peers/vlm-run.sh
# The equivalence check alone (here on 2 text layers and the full 12-layer vision tower; ~2 min; passed 2026-11-28):
#   /usr/bin/python3 bench/peers/vlm_make_checkpoint.py /tmp/vlmpeer/check --text-layers 2 --vision-layers 12
#   node_modules/.bin/tsx bench/peers/vlm-step.mts /tmp/vlmpeer/check --write-prompt
#   /usr/bin/python3 bench/peers/vlm_grpo_step.py /tmp/vlmpeer/check --check /tmp/vlmpeer/check/out
#   node_modules/.bin/tsx bench/peers/vlm-check.mts /tmp/vlmpeer/check /tmp/vlmpeer/check/out
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CKPT="${CKPT:-${TMPDIR:-/tmp}/vlmpeer/smolvlm-256m}"
OUT="${OUT:-${TMPDIR:-/tmp}/vlmpeer/results}"
LENGTHS="${LENGTHS:-64,128}"
STEPS="${STEPS:-1}"
WARMUP="${WARMUP:-1}"
PY=/usr/bin/python3
TSX=node_modules/.bin/tsx
[ -x "$TSX" ] || { echo "vlm-run.sh: run from the metrl checkout (no $TSX here)" >&2; exit 2; }
mkdir -p "$OUT"
if [ ! -f "$CKPT/model.safetensors" ]; then
  $PY "$HERE/vlm_make_checkpoint.py" "$CKPT" ${TEXT_LAYERS:+--text-layers "$TEXT_LAYERS"} ${VISION_LAYERS:+--vision-layers "$VISION_LAYERS"}
fi
[ -f "$CKPT/vlm-prompt.json" ] || "$TSX" "$HERE/vlm-step.mts" "$CKPT" --write-prompt

stamp() { echo "$(date -u +%H:%M:%S) $1 $(cat /proc/loadavg)" >> "$OUT/loadavg.log"; }
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  for r in ${ORDER:-tfjs torch:1 ort:1 torch:2 ort:2}; do
    case "$r" in
      torch:*) stamp "start torch t${r#torch:}"
        $PY "$HERE/vlm_grpo_step.py" "$CKPT" --threads "${r#torch:}" --lengths "$LENGTHS" --steps "$STEPS" --warmup "$WARMUP" | tee -a "$OUT/results.jsonl"
        stamp "end   torch t${r#torch:}" ;;
      tfjs) stamp "start metrl tfjs"
        "$TSX" "$HERE/vlm-step.mts" "$CKPT" --engine tfjs --threads 1 --lengths "$LENGTHS" --steps "$STEPS" --warmup "$WARMUP" | tee -a "$OUT/results.jsonl"
        stamp "end   metrl tfjs" ;;
      ort:*) stamp "start metrl ort t${r#ort:}"
        "$TSX" "$HERE/vlm-step.mts" "$CKPT" --engine ort --threads "${r#ort:}" --lengths "$LENGTHS" --steps "$STEPS" --warmup "$WARMUP" | tee -a "$OUT/results.jsonl"
        stamp "end   metrl ort t${r#ort:}" ;;
      *) echo "vlm-run.sh: unknown ORDER entry $r" >&2; exit 2 ;;
    esac
  done
fi
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  C="${CHECK_CKPT:-$CKPT}"
  [ -f "$C/vlm-prompt.json" ] || "$TSX" "$HERE/vlm-step.mts" "$C" --write-prompt
  $PY "$HERE/vlm_grpo_step.py" "$C" --check "$OUT/check"
  "$TSX" "$HERE/vlm-check.mts" "$C" "$OUT/check" | tee "$OUT/check.json"
fi
