#!/usr/bin/env bash
# A Vulkan driver for ONNX Runtime's WebGPU provider on a machine without a GPU: Mesa 25's lavapipe (a CPU Vulkan
# driver) from Debian's bookworm-backports suite, fetched with `apt-get download` and unpacked with `dpkg -x` into a
# cache folder, never installed over the system's Mesa (Debian 12's own lavapipe, Mesa 22.3, lacks the dynamic
# indexing Dawn requires and is refused: "No supported adapters"). Prints the environment that selects it, to eval:
#   eval "$(bash .ci/lavapipe.sh)"       # then: npx vitest run tests/models/webgpu-*.test.ts
# Prints nothing when WebGPU already finds an adapter here (a machine with a GPU and its Vulkan driver). Fails (exit 1,
# one line on stderr) when the driver cannot be had or does not start, so that CI cannot silently skip the WebGPU
# tests. Needs `npm ci` done (it probes through onnxruntime-node), apt-get and dpkg-deb; network to the machine's own
# Debian source, whose URI it reads from /etc/apt/sources.list.d/*.sources (or /etc/apt/sources.list), naming no host.
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
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || fail "needs apt-get and dpkg-deb (a Debian machine)"
  [ "$(dpkg --print-architecture)" = amd64 ] || fail "unpacks amd64 packages only (this is $(dpkg --print-architecture))"
  # The machine's main Debian source: the URI of the stanza (or line) that serves the bookworm suite.
  uri=$(awk '/^URIs:/{u=$2} /^Suites:/{for(i=2;i<=NF;i++) if($i=="bookworm") print u}' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
  [ -n "$uri" ] || uri=$(awk '$1=="deb" && $3=="bookworm"{print $2}' /etc/apt/sources.list 2>/dev/null | head -1)
  [ -n "$uri" ] || fail "no Debian bookworm source in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
  apt=$cache/apt
  rm -rf "$apt" "$root" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$root"
  key=/usr/share/keyrings/debian-archive-keyring.gpg
  printf 'deb [signed-by=%s] %s bookworm main\ndeb [signed-by=%s] %s bookworm-backports main\n' "$key" "$uri" "$key" "$uri" >"$apt/sources.list"
  # A private apt state: the machine's own lists and configuration are not touched.
  opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1 -o Acquire::Retries=3 -o Acquire::http::Timeout=60)
  timeout 300 apt-get "${opts[@]}" update -qq >/dev/null 2>&1 || fail "apt-get update against $uri (bookworm, bookworm-backports) failed"
  # What installing them would fetch, given what the machine has (a dependency it lacks comes along); download only.
  bpo=(mesa-vulkan-drivers mesa-libgallium libdrm2 libdrm-common libdrm-amdgpu1 libdrm-intel1)
  wanted=$(apt-get "${opts[@]}" -s install --no-install-recommends "${bpo[@]/%//bookworm-backports}" libvulkan1 2>/dev/null |
    awk '$1=="Inst"{v=$0; sub(/^[^(]*\(/,"",v); sub(/ .*/,"",v); print $2"="v}')
  echo "$wanted" | grep -q '^mesa-vulkan-drivers=' || fail "bookworm-backports offers no mesa-vulkan-drivers here"
  # shellcheck disable=SC2086 # one word per package
  (cd "$apt/debs" && timeout 600 apt-get "${opts[@]}" download -qq $wanted >/dev/null 2>&1) || fail "apt-get download failed ($(echo $wanted))"
  for deb in "$apt/debs"/*.deb; do dpkg-deb -x "$deb" "$root"; done
  [ -f "$lib/libvulkan_lvp.so" ] || fail "mesa-vulkan-drivers has no libvulkan_lvp.so"
  echo "$wanted" >"$cache/packages.txt"
  rm -rf "$apt"
  printf '{"file_format_version":"1.0.0","ICD":{"library_path":"%s/libvulkan_lvp.so","api_version":"1.4.305"}}\n' "$lib" >"$cache/lvp_icd.json"
fi
mkdir -p "$cache/xdg-runtime" && chmod 700 "$cache/xdg-runtime"
export VK_DRIVER_FILES=$cache/lvp_icd.json LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XDG_RUNTIME_DIR=$cache/xdg-runtime VK_LOADER_LAYERS_DISABLE='~implicit~'
probe || fail "ONNX Runtime's WebGPU provider does not start on the lavapipe in $cache ($(tr '\n' ' ' <"$cache/packages.txt"))"
printf 'export VK_DRIVER_FILES=%q LD_LIBRARY_PATH=%q XDG_RUNTIME_DIR=%q VK_LOADER_LAYERS_DISABLE=%q\n' \
  "$VK_DRIVER_FILES" "$LD_LIBRARY_PATH" "$XDG_RUNTIME_DIR" "$VK_LOADER_LAYERS_DISABLE"
