#!/usr/bin/env bash
# Packs what a GPU machine without a package registry needs to run metrl (the `device` tool's machine: no network, no
# Node): the CLI and the device benches bundled by esbuild into single files, the native packages for linux-x64 only
# (onnxruntime-node with its WebGPU provider, Dawn's dawn.node, sharp's libvips), tfjs-backend-wasm's .wasm files and
# the Node binary, all in one xz archive (the tool carries 64 MiB with the checkout). It lands in .dev/ (keep it out of
# git: `echo /.dev/ >> .git/info/exclude`); on the other machine: `bash .dev/unpack.sh`, then `.dev/node .dev/metrl.mjs
# …` from the checkout's root (bench/device-run.sh does both). Arguments: bench scripts to bundle too, e.g.
#   bash bench/device-bundle.sh device-check peer-grpo-forced
# The bundles sit in .dev/, one folder below the root, as scripts/ and bench/ do, so core/paths.ts's PROJECT_ROOT (and
# with it checkpoints/) resolves the same; the ORT worker's entry is bundled to .dev/ort-worker.mjs, the name
# worker-pool.ts asks for beside the module that starts it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.dev
rm -rf "$out" && mkdir -p "$out/node_modules/@img"
esb() {
  node_modules/.bin/esbuild "$1" --bundle --platform=node --format=esm --target=node20 --outfile="$out/$2" --minify-whitespace --minify-syntax \
    --external:onnxruntime-node --external:sharp --external:@tensorflow/tfjs-node --external:@tensorflow/tfjs-node-gpu \
    --log-level=error \
    --banner:js="import { createRequire as __metrlRequire } from 'module'; import { fileURLToPath as __metrlPath } from 'url'; const require = __metrlRequire(import.meta.url); const __filename = __metrlPath(import.meta.url); const __dirname = __filename.replace(/[\\/][^\\/]*$/, '');"
}
esb scripts/cli.ts metrl.mjs
esb models/onnx/ort-worker-main.ts ort-worker.mjs
for b in "$@"; do esb "bench/$b.ts" "$b.mjs"; done
cp node_modules/@tensorflow/tfjs-backend-wasm/dist/*.wasm "$out/"
# Native packages, linux-x64 binaries only.
m=node_modules
cp -r $m/onnxruntime-common $m/detect-libc $m/semver "$out/node_modules/"
mkdir -p "$out/node_modules/onnxruntime-node/bin/napi-v6/linux"
cp -r $m/onnxruntime-node/{dist,lib,package.json} "$out/node_modules/onnxruntime-node/"
cp -r $m/onnxruntime-node/bin/napi-v6/linux/x64 "$out/node_modules/onnxruntime-node/bin/napi-v6/linux/"
cp -r $m/sharp $m/@img/colour $m/@img/sharp-linux-x64 $m/@img/sharp-libvips-linux-x64 "$out/node_modules/" 2>/dev/null || true
mv "$out/node_modules/colour" "$out/node_modules/sharp-linux-x64" "$out/node_modules/sharp-libvips-linux-x64" "$out/node_modules/@img/"
cp "$(command -v node)" "$out/node"
(cd "$out" && tar -cf - * | xz -T2 -6 > ../.dev-native.tar.xz) && rm -rf "$out" && mkdir "$out" && mv .dev-native.tar.xz "$out/native.tar.xz"
cat > "$out/unpack.sh" <<'UNPACK'
# Unpacks .dev/native.tar.xz beside itself (the bundles, the Node binary and the native packages).
set -e
cd "$(dirname "$0")" && xz -dc native.tar.xz | tar -xf - && rm native.tar.xz
UNPACK
ls -la "$out"
