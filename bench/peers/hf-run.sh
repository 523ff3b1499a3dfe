#!/usr/bin/env bash
# One GRPO step on a SmolLM2-135M-shaped Hugging Face decoder, metrl against PyTorch eager, interleaved on one machine:
# ../shared/peers/hf/run.sh's measurement with metrl's side from bench/peers/hf-step.mts, whose update runs on the
# engine's learner (ONNX Runtime under --engine ort). The checkpoint and the torch side are the shared peer's.
#
# Run from the metrl checkout (../shared beside it; Debian's python3-torch for the torch side):
#   OUT=${TMPDIR:-/tmp}/hfpeer/results-ort bash bench/peers/hf-run.sh
#   /usr/bin/python3 ../shared/peers/hf/summarize.py ${TMPDIR:-/tmp}/hfpeer/results-ort/results.jsonl
# Env: LENGTHS (default 64,128), CKPT, ORDER (default "tfjs torch:1 ort:1 torch:2 ort:2"), STEPS (measured steps per
# process and length, default 1), WARMUP (metrl's warm-up steps at min(N, 8) tokens, default 1: torch always runs 1).
set -euo pipefail
PEER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../shared/peers/hf" && pwd)"
METRL="$PWD"
CKPT="${CKPT:-${TMPDIR:-/tmp}/hfpeer/smollm2-135m}"
OUT="${OUT:-${TMPDIR:-/tmp}/hfpeer/results-ort}"
LENGTHS="${LENGTHS:-64,128}"
STEPS="${STEPS:-1}"
PY=/usr/bin/python3
mkdir -p "$OUT"
[ -f "$CKPT/model.safetensors" ] || $PY "$PEER/make_checkpoint.py" "$CKPT"
stamp() { echo "$(date -u +%H:%M:%S) $1 $(cat /proc/loadavg)" >> "$OUT/loadavg.log"; }
for r in ${ORDER:-tfjs torch:1 ort:1 torch:2 ort:2}; do
  case "$r" in
    torch:*) stamp "start torch t${r#torch:}"
      $PY "$PEER/hf_grpo_step.py" "$CKPT" --threads "${r#torch:}" --lengths "$LENGTHS" --steps "$STEPS" --warmup 1 | tee -a "$OUT/results.jsonl"
      stamp "end   torch t${r#torch:}" ;;
    tfjs) stamp "start metrl tfjs"
      node_modules/.bin/tsx bench/peers/hf-step.mts "$CKPT" --engine tfjs --threads 1 --lengths "$LENGTHS" --steps "$STEPS" --warmup "${WARMUP:-1}" | tee -a "$OUT/results.jsonl"
      stamp "end   metrl tfjs" ;;
    ort:*) stamp "start metrl ort t${r#ort:}"
      node_modules/.bin/tsx bench/peers/hf-step.mts "$CKPT" --engine ort --threads "${r#ort:}" --lengths "$LENGTHS" --steps "$STEPS" --warmup "${WARMUP:-1}" | tee -a "$OUT/results.jsonl"
      stamp "end   metrl ort t${r#ort:}" ;;
  esac
done
