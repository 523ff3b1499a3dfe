#!/usr/bin/env bash
# The GPU check on the `device` tool's machine (no network, no Node), in calls that each carry under 64 MiB with the
# tracked tree and whose steps add up to well under 600 s (tests/bench/device-plan.test.ts builds what they carry,
# measures it and adds up the time limits below). From the checkout's root, in this order:
#   webgpu   carry [".dev"] (bash bench/device-bundle.sh)   useful on its own: the machine, the transformers + PEFT
#            peer on a tiny config (a typo in it costs seconds), --device webgpu's probe with ORT's warnings, where
#            every graph's nodes run (the placement bench), the HF fixtures and the built-in model against the CPU
#   stage    carry [".devcuda/part-aa"], then -ab, …: every part of bench/device-cuda-parts.sh but the last, one call
#            each; copies it to /tmp/metrl-cuda on the warm machine
#   cuda     carry [the last part]: joins the parts into the CUDA build (METRL_ORT_CUDA_DIR) and puts the CUDA 13 and
#            cuDNN 9 of torch's nvidia packages on the library path; the CUDA probe (ldd of the provider, ORT's
#            warnings), the transformers + PEFT peer at Gemma 3 4B's shape, the HF fixtures on cuda against the CPU,
#            and Gemma 3 4B-shaped bfloat16 training with `metrl train --device cuda` (bench/gpu-gemma.ts)
# Each step runs under its own time limit (`step SECONDS NAME COMMAND…`); its output goes to
# $OUT/<phase>/<n>-<name>.log as it runs and a line per step (exit status, seconds) to $OUT/<phase>/steps.txt, so a
# call cut short still says what ran and what broke. A step that fails does not stop the next.
set -uo pipefail
phase=${1:-webgpu}
out=${OUT:-/tmp/device-out}/$phase
mkdir -p "$out"
N=.dev/node
n=0
step() {
  local limit=$1 name=$2
  shift 2
  n=$((n + 1))
  local log
  log=$out/$(printf %02d $n)-$name.log
  local t0
  t0=$(date +%s.%N)
  echo "== $name (limit ${limit} s, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))" >"$log"
  timeout --kill-after=5 "$limit" bash -c '"$@"' step "$@" >>"$log" 2>&1
  local rc=$?
  local line
  line="$name: exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  [ $rc = 124 ] && line="$line (its time limit)"
  echo "$line" | tee -a "$out/steps.txt"
}
# The carried CUDA part(s) kept on the machine for the cuda call (the checkout's copy goes with the next call).
stage_parts() {
  mkdir -p /tmp/metrl-cuda && cp .devcuda/part-* .devcuda/SHA256SUMS /tmp/metrl-cuda/ && ls -la /tmp/metrl-cuda
}
machine() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nproc
  $N --version
  python3 -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  ls /usr/local/nvidia/share/vulkan/icd.d/ /usr/share/vulkan/icd.d/ /etc/vulkan/icd.d/
  vulkaninfo --summary | grep -E 'deviceName|driverName|apiVersion'
}
join_cuda() {
  cd /tmp/metrl-cuda && sha256sum -c SHA256SUMS && mkdir -p ort && cat part-* | xz -dc | tar -xf - -C ort && ls -la ort
}

export -f stage_parts machine join_cuda
export N
# The Vulkan loader the bundle carries, and the NVIDIA ICD where the driver's container puts it.
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -e $nvidia_icd ] && export VK_DRIVER_FILES=$nvidia_icd
case $phase in
  webgpu)
    [ -f .dev/native.tar.xz ] || [ -x $N ] || { echo "device-run: no .dev here (carry it: bash bench/device-bundle.sh)"; exit 2; }
    step 20 unpack bash -c '[ ! -f .dev/native.tar.xz ] || bash .dev/unpack.sh'
    step 10 machine machine
    step 35 peer-smoke python3 bench/peers/peft_grpo_step.py --size tiny --steps 1 --prompt-len 16 --new-tokens 8
    step 15 probe-webgpu $N .dev/device-probe.mjs webgpu
    step 55 placement env METRL_EVERY_GRAPH=.dev/every-graph.mjs $N .dev/index.mjs placement
    step 30 hf-agreement-webgpu $N .dev/hf-device-check.mjs webgpu
    step 25 builtin-agreement-webgpu $N .dev/device-check.mjs 16 48
    ;;
  stage)
    step 8 stage-part stage_parts
    ;;
  cuda)
    [ -x $N ] || { echo "device-run: .dev is not unpacked here (the machine went cold?): run the webgpu call first"; exit 2; }
    step 8 stage-part stage_parts
    step 25 join-cuda join_cuda
    export METRL_ORT_CUDA_DIR=/tmp/metrl-cuda/ort
    # CUDA 13, cuBLAS and cuDNN 9 as torch's wheels install them.
    site=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)
    LD_LIBRARY_PATH="$(ls -d "$site"/nvidia/*/lib 2>/dev/null | tr '\n' ':')$LD_LIBRARY_PATH"
    export LD_LIBRARY_PATH
    step 20 probe-cuda $N .dev/device-probe.mjs cuda
    step 90 peer-4b python3 bench/peers/peft_grpo_step.py --size 4b --steps 2 --prompt-len 128 --new-tokens 64
    step 30 hf-agreement-cuda $N .dev/hf-device-check.mjs cuda
    step 140 gemma-4b-cuda env GPU_GEMMA_METRL=.dev/metrl.mjs $N .dev/gpu-gemma.mjs 4b cuda 2
    ;;
  *)
    echo "device-run: phase webgpu, stage or cuda (not $phase)"
    exit 2
    ;;
esac
echo "device-run $phase: logs in $out"
