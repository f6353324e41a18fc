#!/usr/bin/env bash
# Two Kite builds on the same GGUF, run by run, alternating which goes first: a change's speed
# and memory before and after it, measured side by side on a shared, noisy machine.
#
#   bench/kite_vs_kite.sh BEFORE_KITE AFTER_KITE MODEL.gguf [--runs 5] [-t 2] [-p 512] [-n 128]
#
# Each run starts one `kite bench --json -r 1` process per build (one warm-up, one timed
# repetition of ppP and of tgN). Printed: the median t/s of each build over the runs, the ratio
# after/before, and the median peak RSS of each.
set -euo pipefail

(($# >= 3)) || { sed -n '2,8p' "$0"; exit 2; }
before="$1" after="$2" model="$3"
shift 3
runs=5 threads=2 n_prompt=512 n_gen=128
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    -t|--threads) threads="$2"; shift 2 ;;
    -p) n_prompt="$2"; shift 2 ;;
    -n) n_gen="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
run() {  # run BUILD_NAME KITE RUN_INDEX
  "$2" bench -m "$model" -t "$threads" -p "$n_prompt" -n "$n_gen" -r 1 --json >"$out/$1.$3.json"
}
for ((i = 0; i < runs; i++)); do
  if ((i % 2 == 0)); then run before "$before" "$i"; run after "$after" "$i"
  else run after "$after" "$i"; run before "$before" "$i"; fi
done

python3 - "$out" "$runs" "$model" <<'PY'
import json, statistics, sys
out, runs, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def figures(build):
    rows = {}
    for i in range(runs):
        for test in json.load(open(f"{out}/{build}.{i}.json")):
            name = f"pp{test['n_prompt']}" if test["n_prompt"] else f"tg{test['n_gen']}"
            rows.setdefault(name, []).append(test["avg_ts"])
            rows.setdefault("rss", []).append(test["peak_rss_bytes"] / 2**20)
    return {k: statistics.median(v) for k, v in rows.items()}
b, a = figures("before"), figures("after")
print(f"{model}: median of {runs} runs, alternating")
print(f"{'test':>8} {'before':>10} {'after':>10} {'after/before':>13}")
for name in b:
    unit = " MiB" if name == "rss" else " t/s"
    label = "peak RSS" if name == "rss" else name
    print(f"{label:>8} {b[name]:>10.2f} {a[name]:>10.2f} {a[name] / b[name]:>13.3f}{unit}")
PY
