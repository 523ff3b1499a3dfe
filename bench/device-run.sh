#!/usr/bin/env bash
# What ran on the GPU machine (the `device` tool's: no network, no Node): unpack the Vulkan loader (.gl, carried Debian
# packages) and .dev (bench/device-bundle.sh), then the GPU checks, each under its own time limit so that one that hangs
# does not take the others with it; the log goes to $OUT/device-PHASE.log. From the checkout's root:
#   bash bench/device-run.sh checks    # the machine, --device cuda's line, bench/device-check.ts, a trial run on webgpu
#   bash bench/device-run.sh timings   # the GRPO step (bench/peer-grpo-forced.ts) on webgpu and on the machine's CPU
#   bash bench/device-run.sh more      # --backend webgpu's refusal, a trial run with the learner on webgpu, the chess
#                                      # step on webgpu, a 135M-parameter Hugging Face decoder on webgpu and the CPU
#   bash bench/device-run.sh stage     # (one call per part of bench/device-cuda-parts.sh) keep the carried CUDA part
#   bash bench/device-run.sh hf        # join the parts into METRL_ORT_CUDA_DIR, find CUDA 13 / cuDNN 9 in torch's
#                                      # nvidia packages, then the HF learner's agreement on cuda, Gemma 3 1B and 4B
#                                      # shapes training on cuda (bench/gpu-gemma.ts), 1B on webgpu
# Bundle for hf: bash bench/device-bundle.sh gpu-gemma hf-device-check (and carry .devshared for the fixtures).
set -uo pipefail
phase=${1:-checks}
if [ "$phase" = stage ]; then
  mkdir -p /tmp/metrl-cuda && cp .devcuda/part-* .devcuda/SHA256SUMS /tmp/metrl-cuda/ && ls -la /tmp/metrl-cuda; exit 0
fi
out=${OUT:-/tmp/device-out}; mkdir -p "$out"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f .dev/native.tar.xz ] && bash .dev/unpack.sh
N=.dev/node
log() { echo "== $* ($(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"; }
{
  if [ "$phase" = checks ]; then
    log machine; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; $N --version
    ls /usr/local/nvidia/share/vulkan/icd.d/ /usr/share/vulkan/icd.d/ /etc/vulkan/icd.d/ 2>&1
    vulkaninfo --summary 2>&1 | grep -E "deviceName|driverName|apiVersion|ERROR|rror" | head -8
    log "--device cuda (the CUDA provider's libraries are not in the npm package: its one-line error)"
    timeout 40 $N .dev/metrl.mjs train --domain shell --modality text --steps 1 --device cuda --out /tmp/r-cuda; echo "exit $?"
    log "device-check"
    timeout 170 $N .dev/device-check.mjs 64
    log "trial run on --device webgpu"
    timeout 80 $N .dev/metrl.mjs train --domain shell --modality text --steps 3 --test-size 16 --eval-every 3 --device webgpu --out "$out/trial-webgpu"; echo "exit $?"
  elif [ "$phase" = more ]; then
    log "--backend webgpu (refused: tfjs's WebGPU backend needs OffscreenCanvas for synchronous reads)"
    timeout 30 $N .dev/metrl.mjs pretrain --out /tmp/p-webgpu --backend webgpu --steps 1; echo "exit $?"
    log "trial run on --device webgpu, learner there too"
    timeout 80 $N .dev/metrl.mjs train --domain shell --modality text --steps 3 --test-size 16 --eval-every 3 --device webgpu --out "$out/trial-webgpu"; echo "exit $?"
    log "GRPO step, chess, --device webgpu"
    METRL_DEVICE=webgpu timeout 120 $N .dev/peer-grpo-forced.mjs 1 chess:376
    log "Hugging Face decoder (SmolLM2-135M shape) on tfjs, ORT CPU and ORT webgpu"
    # hf.bench.ts copies the real SmolVLM tokenizer from ../shared, which does not travel: carried as .devshared.
    [ -d ../shared ] || { mkdir -p ../shared && cp -r .devshared/fixtures ../shared/; }
    METRL_BENCH_HF_ORT_DEVICE=webgpu timeout 130 $N .dev/index.mjs hf-ort
  else
    log "GRPO step, --device webgpu (rollout, reference log-probs on the GPU; learner on the CPU)"
    METRL_DEVICE=webgpu timeout 110 $N .dev/peer-grpo-forced.mjs 2
    log "GRPO step, CPU, --threads 1"
    METRL_THREADS=1 timeout 60 $N .dev/peer-grpo-forced.mjs 2
    log "GRPO step, CPU, --threads 8"
    METRL_THREADS=8 timeout 50 $N .dev/peer-grpo-forced.mjs 2
  fi
  if [ "$phase" = hf ]; then
    log "CUDA build: join the staged parts"
    export METRL_ORT_CUDA_DIR=/tmp/metrl-cuda/ort
    if [ ! -f "$METRL_ORT_CUDA_DIR/libonnxruntime_providers_cuda.so" ]; then
      (cd /tmp/metrl-cuda && sha256sum -c SHA256SUMS) && mkdir -p "$METRL_ORT_CUDA_DIR" && cat /tmp/metrl-cuda/part-* | xz -dc | tar -xf - -C "$METRL_ORT_CUDA_DIR"
    fi
    ls -la "$METRL_ORT_CUDA_DIR"
    # CUDA 13, cuBLAS and cuDNN 9 as torch's wheels install them.
    site=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)
    export LD_LIBRARY_PATH="$(ls -d "$site"/nvidia/*/lib 2>/dev/null | tr '\n' ':')${LD_LIBRARY_PATH:-}"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    [ -d ../shared ] || { mkdir -p ../shared && cp -r .devshared/fixtures ../shared/; }
    log "HF learner and sampler, cuda and webgpu against the CPU (fixtures)"
    timeout 120 $N .dev/hf-device-check.mjs
    log "Gemma 3 1B shape, --device cuda (bf16 weights on the GPU)"
    GPU_GEMMA_METRL=.dev/metrl.mjs timeout 300 $N .dev/gpu-gemma.mjs 1b cuda 2
    log "Gemma 3 4B shape, --device cuda"
    GPU_GEMMA_METRL=.dev/metrl.mjs timeout 420 $N .dev/gpu-gemma.mjs 4b cuda 2
    log "Gemma 3 1B shape, --device webgpu"
    GPU_GEMMA_METRL=.dev/metrl.mjs timeout 300 $N .dev/gpu-gemma.mjs 1b webgpu 1
  fi
  log end
} 2>&1 | tee "$out/device-$phase.log"
