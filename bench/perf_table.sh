#!/usr/bin/env bash
# The README's performance table: makes each model with `kite synth` (random weights, real
# shapes) in DIR, then runs bench/compare.sh on it (Kite against llama.cpp, alternating, median
# of --runs), one after another, printing compare.sh's table for each.
#
#   bench/perf_table.sh [--dir DIR] [--runs 5] [--threads 2] [--only NAME]...
#
# Models: llama-3.2-1b in q4_0, q8_0, q4_k_m, f16, bf16; smollm2-135m in q4_0, q8_0, f16.
# Needs what compare.sh needs (a built kite and machine_limits_bench, `npm ci` in
# bench/llamacpp) and ~10 GB in DIR. Takes about 40 minutes at 5 runs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir=/tmp/kite-perf runs=5 threads=2 only=()
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --only) only+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "perf_table.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
kite="$root/build/kite"
[[ -x "$kite" ]] || { echo "perf_table.sh: build kite first (make build)" >&2; exit 2; }
mkdir -p "$dir"
models=(llama-3.2-1b:q4_0 llama-3.2-1b:q8_0 llama-3.2-1b:q4_k_m llama-3.2-1b:f16 llama-3.2-1b:bf16
        smollm2-135m:q4_0 smollm2-135m:q8_0 smollm2-135m:f16)
for entry in "${models[@]}"; do
  preset="${entry%%:*}" type="${entry##*:}" name="${entry/:/-}"
  if ((${#only[@]})) && [[ ! " ${only[*]} " =~ " $name " ]]; then continue; fi
  file="$dir/$name.gguf"
  [[ -f "$file" ]] || "$kite" synth --preset "$preset" --type "$type" -o "$file" >&2
  echo "## $name"
  "$root/bench/compare.sh" "$file" --runs "$runs" --threads "$threads" -p 512 -n 128 2>/dev/null
  echo
done
