#!/usr/bin/env bash
# Packs what the GPU machine (the `device` tool's: no network, no Node) needs for the device check's WebGPU call into
# .dev/ (git-ignored): the CLI and the device benches bundled by esbuild into single files, onnxruntime-node for
# linux-x64 (its WebGPU provider included), tfjs-backend-wasm's .wasm files, the Node binary, the Vulkan loader
# (libvulkan.so.1, from Debian's libvulkan1 through .ci/debian-packages.sh) and the Hugging Face fixtures the checks
# read, in one xz archive beside unpack.sh. Lean, to stay under the 64 MiB a call carries with the tracked tree: no
# sharp or libvips (no check renders a PNG; a stub that refuses stands in), shared code bundled once, Node stripped,
# xz at its strongest
# (tests/bench/device-plan.test.ts builds this and measures it). On the other machine bench/device-run.sh webgpu
# unpacks it. The bundles sit in .dev/, one folder below the root as bench/ is, so core/paths.ts resolves the
# checkout's checkpoints/ the same; the ORT worker's entry is bundled to .dev/ort-worker.mjs, the name
# worker-pool.ts asks for beside the module that starts it.
#   bash bench/device-bundle.sh            (DEVICE_BUNDLE_DIR: another folder than .dev)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DEVICE_BUNDLE_DIR:-.dev}
build=$(mktemp -d "${TMPDIR:-/tmp}/metrl-device-bundle-XXXXXX")
trap 'rm -rf "$build"' EXIT
rm -rf "$out" && mkdir -p "$out" "$build/node_modules/onnxruntime-node/bin/napi-v6/linux" "$build/lib"
cat >"$build/no-sharp.mjs" <<'STUB'
// sharp is not in the device bundle (bench/device-bundle.sh): the device checks render no PNG.
export default function sharp() {
  throw new Error('sharp is not in the device bundle (bench/device-bundle.sh)');
}
STUB
# One esbuild run over every entry, its shared code split into chunks (each file bundled alone held its own tfjs).
node_modules/.bin/esbuild --bundle --splitting --platform=node --format=esm --target=node20 --outdir="$build" \
  --out-extension:.js=.mjs --chunk-names='chunk-[hash]' --minify-whitespace --minify-syntax --log-level=error \
  --alias:sharp="$build/no-sharp.mjs" --external:onnxruntime-node --external:@tensorflow/tfjs-node \
  --external:@tensorflow/tfjs-node-gpu \
  --banner:js="import { createRequire as __metrlRequire } from 'module'; import { fileURLToPath as __metrlPath } from 'url'; const require = __metrlRequire(import.meta.url); const __filename = __metrlPath(import.meta.url); const __dirname = __filename.replace(/[\\/][^\\/]*$/, '');" \
  metrl=scripts/cli.ts ort-worker=models/onnx/builtin/worker-main.ts index=bench/index.ts every-graph=bench/every-graph.ts \
  device-probe=bench/device-probe.ts hf-device-check=bench/hf-device-check.ts device-check=bench/device-check.ts \
  gpu-gemma=bench/gpu-gemma.ts
rm "$build/no-sharp.mjs"
cp node_modules/@tensorflow/tfjs-backend-wasm/dist/*.wasm "$build/"
m=node_modules
cp -r $m/onnxruntime-common $m/detect-libc $m/semver "$build/node_modules/"
cp -r $m/onnxruntime-node/{dist,lib,package.json} "$build/node_modules/onnxruntime-node/"
cp -r $m/onnxruntime-node/bin/napi-v6/linux/x64 "$build/node_modules/onnxruntime-node/bin/napi-v6/linux/"
# Node without its static symbol table (its dynamic symbols, which native addons bind to, stay): 12 MB less.
cp "$(command -v node)" "$build/node" && strip "$build/node"
bash .ci/debian-packages.sh "$build/debian" libvulkan1
cp -P "$build"/debian/root/usr/lib/x86_64-linux-gnu/libvulkan.so.1* "$build/lib/"
rm -rf "$build/debian"
# The fixtures hf-device-check.ts and every-graph.ts read (their reference files are the CPU tests' business).
mkdir -p "$build/shared/fixtures/hf"
for f in llama llama-bf16 qwen2 gemma3 idefics3 tokenizer-smolvlm; do
  mkdir -p "$build/shared/fixtures/hf/$f"
  find "../shared/fixtures/hf/$f" -maxdepth 1 -type f ! -name 'reference.*' -exec cp {} "$build/shared/fixtures/hf/$f/" \;
done
(cd "$build" && tar -cf - . | xz -T2 -9e) >"$out/native.tar.xz"
cat >"$out/unpack.sh" <<'UNPACK'
# Unpacks .dev/native.tar.xz beside itself (the bundles, Node, onnxruntime-node, the Vulkan loader, the fixtures), and
# puts the fixtures at ../shared beside the checkout where it has none.
set -e
cd "$(dirname "$0")" && xz -dc native.tar.xz | tar -xf - && rm native.tar.xz
[ -d ../../shared/fixtures/hf ] || { mkdir -p ../../shared && cp -r shared/fixtures ../../shared/; }
UNPACK
ls -la "$out"
