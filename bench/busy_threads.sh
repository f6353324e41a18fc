#!/usr/bin/env bash
# Decode and prefill speed with 1 and with 2+ threads, on an idle machine and beside N busy
# processes (`yes > /dev/null`, one CPU each), to see that extra threads never cost speed when
# the machine is shared. For each number of busy neighbours, runs `kite bench` with each thread
# count (and each --kite binary, to compare builds) in turn, alternating, --runs times, and
# prints the median t/s of each.
#
#   bench/busy_threads.sh MODEL.gguf [--runs 5] [--busy 0,1,2] [--threads 1,2] [-p 64] [-n 32]
#                         [--kite build/kite]...
#
# Example: build/kite synth --preset smollm2-135m --type q4_0 -o /tmp/s.gguf
#          bench/busy_threads.sh /tmp/s.gguf --kite /tmp/kite-before --kite build/kite
# On a machine that other work shares, give the run (and the neighbours it starts) its own
# scheduler group ahead of that work, so that the neighbours counted are the ones it starts:
#   setsid bash -c 'echo -20 > /proc/self/autogroup; bench/busy_threads.sh /tmp/s.gguf'  # root
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="" runs=5 busy=0,1,2 threads=1,2 n_prompt=64 n_gen=32 kites=()
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --busy) busy="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    -p) n_prompt="$2"; shift 2 ;;
    -n) n_gen="$2"; shift 2 ;;
    --kite) kites+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "busy_threads.sh: unknown argument $1" >&2; exit 2 ;;
    *) model="$1"; shift ;;
  esac
done
[[ -n "$model" ]] || { echo "busy_threads.sh: give a MODEL.gguf (see --help)" >&2; exit 2; }
((${#kites[@]})) || kites=("$root/build/kite")
for kite in "${kites[@]}"; do
  [[ -x "$kite" ]] || { echo "busy_threads.sh: $kite is not an executable kite" >&2; exit 2; }
done
out="$(mktemp -d)"
neighbours=()
stop_neighbours() {
  for pid in "${neighbours[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${neighbours[@]}"; do wait "$pid" 2>/dev/null || true; done
  neighbours=()
}
trap 'stop_neighbours; rm -rf "$out"' EXIT

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) CPUs;" \
  "kite bench -m $(basename "$model") -p $n_prompt -n $n_gen -r 3, median of $runs runs"
for b in ${busy//,/ }; do
  for ((i = 0; i < b; i++)); do
    yes > /dev/null &
    neighbours+=($!)
  done
  for ((run = 0; run < runs; run++)); do
    for k in "${!kites[@]}"; do
      for t in ${threads//,/ }; do
        "${kites[$k]}" bench -m "$model" -p "$n_prompt" -n "$n_gen" -r 3 -t "$t" --json \
          > "$out/$b.$k.$t.$run.json"
      done
    done
  done
  stop_neighbours
done

python3 - "$out" "$runs" "$busy" "$threads" "${kites[@]}" <<'EOF'
import json, statistics, sys
out, runs, busy, threads, kites = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
busy = busy.split(","); threads = threads.split(",")
def median(b, k, t, test):
    speeds = []
    for run in range(runs):
        for row in json.load(open(f"{out}/{b}.{k}.{t}.{run}.json")):
            if (row["n_gen"] == 0) == (test == "pp"):
                speeds.append(row["avg_ts"])
    return statistics.median(speeds)
header = ["busy", "kite"] + [f"{test} -t{t}" for test in ("pp", "tg") for t in threads]
header += [f"tg -t{t}/-t{threads[0]}" for t in threads[1:]]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for b in busy:
    for k, kite in enumerate(kites):
        cells = [b, kite]
        tg = {t: median(b, k, t, "tg") for t in threads}
        cells += [f"{median(b, k, t, 'pp'):.1f}" for t in threads]
        cells += [f"{tg[t]:.1f}" for t in threads]
        cells += [f"{tg[t] / tg[threads[0]]:.2f}" for t in threads[1:]]
        print("| " + " | ".join(cells) + " |")
EOF
