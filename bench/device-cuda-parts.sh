#!/usr/bin/env bash
# Cuts the ONNX Runtime CUDA build (`metrl install-cuda`'s folder: ORT 1.29.0's binding and library and its CUDA 13
# provider, 270 MB) into parts small enough to travel beside the checkout to the `device` tool's GPU machine, which
# reaches no registry and carries 64 MiB a call with the checkout's tracked tree (~25 MB): xz-compressed at its
# strongest, then 35 MiB parts in .devcuda/ (git-ignored). Each part but the last travels in a call of its own
# (`carry: [".devcuda/part-aa"]`, `bash bench/device-run.sh stage`), which copies it to /tmp/metrl-cuda on the warm
# machine; the last travels with `bash bench/device-run.sh cuda`, which joins and unpacks them
# (tests/bench/device-plan.test.ts measures the calls). Run from the checkout's root, after `npx metrl install-cuda`
# (or with METRL_ORT_CUDA_DIR naming the folder).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${METRL_ORT_CUDA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/metrl/onnxruntime-cuda-1.29.0}
for f in onnxruntime_binding.node libonnxruntime.so.1 libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so; do
  [ -f "$src/$f" ] || { echo "device-cuda-parts: $src/$f is missing; run npx metrl install-cuda first" >&2; exit 2; }
done
rm -rf .devcuda && mkdir .devcuda
tar -C "$src" -cf - onnxruntime_binding.node libonnxruntime.so.1 libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so | xz -T2 -9e | split -b 35M - .devcuda/part-
(cd .devcuda && sha256sum part-* > SHA256SUMS)
ls -la .devcuda
