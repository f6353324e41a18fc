#!/usr/bin/env bash
# Builds llama.cpp's llama-quantize, llama-imatrix, llama-perplexity and llama-bench, the peers of
# `kite quantize`, `kite imatrix`, `kite eval` and `kite bench`, from the llama.cpp source the pinned npm
# package node-llama-cpp@3.21.1 bundles (llama/gitRelease.bundle), outside the repository:
#
#   bench/build_llamacpp_tools.sh [DIR]     # default ~/.cache/kite-bench/llama.cpp
#
# Needs `make llamacpp` (or `npm ci` in tools/llamacpp) first. CPU only, GGML_NATIVE.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$HOME/.cache/kite-bench/llama.cpp}
bundle="$root/tools/llamacpp/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[[ -f "$bundle" ]] || { echo "build_llamacpp_tools.sh: no $bundle (run make llamacpp)" >&2; exit 2; }
[[ -d "$dir/.git" ]] || git clone -q "$bundle" "$dir"
cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
ninja -C "$dir/build" llama-quantize llama-imatrix llama-perplexity llama-bench
echo "$dir/build/bin"
