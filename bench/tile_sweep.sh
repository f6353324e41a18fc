#!/usr/bin/env bash
# The decode tile shapes of backends/cpu/tile_shape.cpp's table, measured on this CPU: for each
# weight type, `matmul_bench THREADS TYPE STREAMS PREFETCH` at every streams x prefetch pair,
# rounds alternating, then the mean GEMV GB/s over matmul_bench's shapes (1B and, where K fits
# the type's block, 135M) per pair and round.
# The best pair of a family (float: f16/bf16; legacy: q4_0/q8_0) is the table row for this CPU.
#
#   bench/tile_sweep.sh [--rounds 3] [--threads 2] [--types "q4_0 q8_0 f16 bf16"]
#                       [--streams "1 4 8"] [--prefetch "0 1024 2048"] [--bench PATH]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=3 threads=2 types="q4_0 q8_0 f16 bf16" streams="1 4 8" prefetch="0 1024 2048"
bench="$root/build/matmul_bench"
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --streams) streams="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --bench) bench="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "tile_sweep.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bench" ]] || { echo "tile_sweep.sh: no $bench; build the matmul_bench target" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "tile_sweep.sh: --rounds must be >= 1" >&2; exit 2; }

echo "type streams prefetch GB/s per round (mean over the shapes), $threads threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"
results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for ((round = 1; round <= rounds; ++round)); do
  for t in $types; do
    for s in $streams; do
      for p in $prefetch; do
        gbs=$("$bench" "$threads" "$t" "$s" "$p" | awk 'NR > 2 { sum += $4; n++ } END { if (n) printf "%.1f", sum / n }')
        [[ -n "$gbs" ]] || { echo "tile_sweep.sh: matmul_bench printed nothing for $t" >&2; exit 1; }
        echo "$t $s $p $gbs" >> "$results"
      done
    done
  done
done
awk '{ key = $1 " " $2 " " $3; v[key] = v[key] " " $4; sum[key] += $4; n[key]++ }
     END { for (k in v) printf "%-16s %s   mean %.1f\n", k, v[k], sum[k] / n[k] }' "$results" | sort -k1,1 -k2n -k3n
