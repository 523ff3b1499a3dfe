#!/usr/bin/env bash
# A Vulkan driver for ONNX Runtime's WebGPU provider on a machine without a GPU: Mesa 25's lavapipe (a CPU Vulkan
# driver) from Debian's bookworm-backports suite, fetched with `apt-get download` and unpacked with `dpkg -x` into a
# cache folder, never installed over the system's Mesa (Debian 12's own lavapipe, Mesa 22.3, lacks the dynamic
# indexing Dawn requires and is refused: "No supported adapters"). Prints the environment that selects it, to eval:
#   eval "$(bash .ci/lavapipe.sh)"       # then: npx vitest run tests/models/webgpu-*.test.ts
# Prints nothing when WebGPU already finds an adapter here (a machine with a GPU and its Vulkan driver). Fails (exit 1,
# one line on stderr) when the driver cannot be had or does not start, so that CI cannot silently skip the WebGPU
# tests. Needs `npm ci` done (it probes through onnxruntime-node) and network to the machine's own Debian source
# (.ci/debian-packages.sh fetches and unpacks the packages; it names no host).
# Cache: METRL_LAVAPIPE_DIR, default ${XDG_CACHE_HOME:-~/.cache}/metrl/lavapipe.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() {
  echo "lavapipe: $*" >&2
  exit 1
}

# One session on the WebGPU provider running a MatMul (a provider that loads but cannot compute fails here too).
probe() {
  timeout 120 node --input-type=module -e "
    import * as ort from 'onnxruntime-node';
    // y = x · x for a 2 × 2 float x (GraphBuilder's bytes of that one-node graph).
    const bytes = Buffer.from('CAgSBW1ldHJsOlgKHwoBeAoBeBIBeRoKbl9NYXRNdWxfMCIGTWF0TXVsOgASC21ldHJsLXByb2JlWhMKAXgSDgoMCAESCAoCCAIKAggCYhMKAXkSDgoMCAESCAoCCAIKAggCQgQKABAR', 'base64');
    const s = await ort.InferenceSession.create(bytes, { executionProviders: ['webgpu'], logSeverityLevel: 4 });
    const x = new ort.Tensor('float32', Float32Array.of(1, 2, 3, 4), [2, 2]);
    const y = (await s.run({ x })).y.data;
    if (y.join() !== '7,10,15,22') throw new Error('MatMul gave ' + y.join());
  " >/dev/null 2>&1
}

if probe; then exit 0; fi

cache=${METRL_LAVAPIPE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/metrl/lavapipe}
root=$cache/root
lib=$root/usr/lib/x86_64-linux-gnu
if [ ! -f "$cache/lvp_icd.json" ]; then
  [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || fail "unpacks amd64 packages only"
  bpo=(mesa-vulkan-drivers mesa-libgallium libdrm2 libdrm-common libdrm-amdgpu1 libdrm-intel1)
  bash .ci/debian-packages.sh "$cache" "${bpo[@]/%//bookworm-backports}" libvulkan1 || fail "the driver's packages could not be had"
  [ -f "$lib/libvulkan_lvp.so" ] || fail "mesa-vulkan-drivers has no libvulkan_lvp.so"
  printf '{"file_format_version":"1.0.0","ICD":{"library_path":"%s/libvulkan_lvp.so","api_version":"1.4.305"}}\n' "$lib" >"$cache/lvp_icd.json"
fi
mkdir -p "$cache/xdg-runtime" && chmod 700 "$cache/xdg-runtime"
export VK_DRIVER_FILES=$cache/lvp_icd.json LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XDG_RUNTIME_DIR=$cache/xdg-runtime VK_LOADER_LAYERS_DISABLE='~implicit~'
probe || fail "ONNX Runtime's WebGPU provider does not start on the lavapipe in $cache ($(tr '\n' ' ' <"$cache/packages.txt"))"
printf 'export VK_DRIVER_FILES=%q LD_LIBRARY_PATH=%q XDG_RUNTIME_DIR=%q VK_LOADER_LAYERS_DISABLE=%q\n' \
  "$VK_DRIVER_FILES" "$LD_LIBRARY_PATH" "$XDG_RUNTIME_DIR" "$VK_LOADER_LAYERS_DISABLE"
