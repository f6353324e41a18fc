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
# On a CPU with AMX, -march=native turns on ggml's AMX matmuls. This release's die with SIGILL in
# their first tileloadd at a prefill (ggml_backend_amx_mul_mat, seen on a 2-vCPU Xeon whose AMX
# runs Kite's tiles), yet decode Q4_0 and Q8_0 about twice as fast as its build without them
# there. So such a CPU gets both: build/ without AMX (the folder printed, for every prefill) and
# build-amx/ with it (its llama-bench for decode:
# bench/compare.sh --llama-bench DIR/build-amx/bin/llama-bench -p 0).
build() {  # folder, extra compiler flags
  cmake -S "$dir" -B "$dir/$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DCMAKE_C_FLAGS="$2" -DCMAKE_CXX_FLAGS="$2" \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    >/dev/null
  ninja -C "$dir/$1" llama-quantize llama-imatrix llama-perplexity llama-bench
}
if grep -qw amx_tile /proc/cpuinfo; then
  build build-amx ""
  build build "-U__AMX_TILE__ -U__AMX_INT8__ -U__AMX_BF16__"
else
  build build ""
fi
echo "$dir/build/bin"
