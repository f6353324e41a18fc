#!/usr/bin/env bash
# `kite serve` against llama-server on the same GGUF, at 1, 4 and 16 concurrent streams: aggregate
# generated tokens/s and time to first token p50/p99 (bench/serve_load.mjs), rounds taken in turns
# (kite, llama-server, kite, ...), medians printed.
#
#   bench/serve_compare.sh MODEL.gguf [--rounds 5] [--threads 2] [--tokens 128] [--streams "1 4 16"]
#                          [--kite build/kite] [--llama-server PATH]
#
# llama-server is built, when not given, from the llama.cpp source that the pinned npm package
# node-llama-cpp@3.21.1 bundles (as bench/build_llamacpp_tools.sh does), outside the repository
# in ~/.cache/kite-bench/llama.cpp-server; it needs `make llamacpp` first. Both servers get the
# same threads, one slot per stream and a context of 512 tokens per slot. Loopback only.
# A demo-model GGUF: build/kite convert models/demo /tmp/demo.gguf
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=5 threads=2 tokens=128 streams="1 4 16" kite="$root/build/kite" llama_server="" model=""
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --kite) kite=$2; shift 2 ;;
    --llama-server) llama_server=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "serve_compare.sh: unknown flag $1" >&2; exit 2 ;;
    *) model=$1; shift ;;
  esac
done
[[ -f "$model" ]] || { echo "serve_compare.sh: MODEL.gguf missing: '$model'" >&2; exit 2; }

if [[ -z "$llama_server" ]]; then
  dir=$HOME/.cache/kite-bench/llama.cpp-server
  bundle="$root/tools/llamacpp/node_modules/node-llama-cpp/llama/gitRelease.bundle"
  [[ -f "$bundle" ]] || { echo "serve_compare.sh: no $bundle (run make llamacpp)" >&2; exit 2; }
  [[ -d "$dir/.git" ]] || git clone -q "$bundle" "$dir"
  cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
  ninja -C "$dir/build" llama-server >/dev/null
  llama_server=$dir/build/bin/llama-server
fi

port=18731
max_streams=0
for s in $streams; do ((s > max_streams)) && max_streams=$s; done
wait_ready() {
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0; sleep 0.1; done
  echo "serve_compare.sh: server not ready" >&2; return 1
}
start_server() {  # $1: kite | llama
  if [[ $1 == kite ]]; then
    "$kite" serve -m "$model" --port $port -t "$threads" --parallel "$max_streams" --ctx 512 --max-queue 256 2>/dev/null &
  else
    "$llama_server" -m "$model" --port $port -t "$threads" -np "$max_streams" -c $((512 * max_streams)) \
      --log-disable >/dev/null 2>&1 &
  fi
  server=$!
  wait_ready
}
results=$(mktemp)
for round in $(seq "$rounds"); do
  for peer in kite llama; do
    start_server $peer
    node "$root/bench/serve_load.mjs" --url "http://127.0.0.1:$port" --streams 1 --tokens 8 >/dev/null  # warm-up
    for s in $streams; do
      echo "$peer $(node "$root/bench/serve_load.mjs" --url "http://127.0.0.1:$port" --streams "$s" --tokens "$tokens")" >> "$results"
    done
    kill -TERM $server; wait $server 2>/dev/null || true
  done
done
python3 - "$results" "$streams" <<'EOF'
import json, statistics, sys
rows = [line.split(" ", 1) for line in open(sys.argv[1])]
print("streams | kite tok/s | llama-server tok/s | ratio | kite TTFT p50/p99 ms | llama-server TTFT p50/p99 ms")
for s in map(int, sys.argv[2].split()):
    med = {}
    for peer in ("kite", "llama"):
        runs = [json.loads(r) for p, r in rows if p == peer and json.loads(r)["streams"] == s]
        med[peer] = {k: statistics.median(r[k] for r in runs) for k in ("tokens_per_second", "ttft_p50_ms", "ttft_p99_ms")}
    k, l = med["kite"], med["llama"]
    print(f"{s} | {k['tokens_per_second']:.0f} | {l['tokens_per_second']:.0f} | {k['tokens_per_second'] / l['tokens_per_second']:.2f} | "
          f"{k['ttft_p50_ms']:.1f}/{k['ttft_p99_ms']:.1f} | {l['ttft_p50_ms']:.1f}/{l['ttft_p99_ms']:.1f}")
EOF
rm -f "$results"
