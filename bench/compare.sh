#!/usr/bin/env bash
# Kite against llama.cpp on the same GGUF file, same threads, run by run, alternating which goes
# first, and each against this machine's limits (bench/machine_limits_bench.cpp).
#
#   bench/compare.sh MODEL.gguf [--runs 5] [--threads 2] [-p 512] [-n 128] [--reps 1]
#                    [--llama-bench PATH] [--kite PATH] [--limits PATH] [--backend cpu]
#                    [--out DIR]
#
# Each run starts one `kite bench` process and one llama.cpp process (the node-llama-cpp script
# in bench/llamacpp/, or a llama-bench binary built by hand with --llama-bench), each doing one
# warm-up and --reps timed repetitions of ppP and tgN; a run's figure is its mean t/s. Printed per
# figure: the median over runs of each, their ratio, and each as a percentage of the limit:
#   decode limit  = read bandwidth (GB/s at --threads) / bytes read per token, where bytes =
#                   model_size + the KV cache read at the mean position of tgN (f16 K and V);
#   prefill limit = peak MACs/s / MACs per token, MACs per token ~= model_n_params (every weight
#                   multiplies once per token; tied embeddings count once, as lm_head), using the
#                   int8 dot-product peak for quantized files and the FP32 FMA peak otherwise.
# Also: peak RSS of each process, and time to first token = load + the ppP prefill (whose last
# logits give the first token), medians over runs. llama-bench binaries report neither load time
# nor RSS; RSS then comes from /usr/bin/time and time to first token is left out.
# The medians and limits also go to summary.json in the --out folder (read by decode_table.sh).
# Needs: jq, python3, node (for the node-llama-cpp peer; `npm ci` in bench/llamacpp first).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=5 threads=2 n_prompt=512 n_gen=128 reps=1 backend=cpu
llama_bench="" kite="" limits="" out=""
model=""
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --threads|-t) threads="$2"; shift 2 ;;
    -p) n_prompt="$2"; shift 2 ;;
    -n) n_gen="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --llama-bench) llama_bench="$2"; shift 2 ;;
    --kite) kite="$2"; shift 2 ;;
    --limits) limits="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown flag $1" >&2; exit 2 ;;
    *) [[ -z "$model" ]] || { echo "compare.sh: one model only" >&2; exit 2; }; model="$1"; shift ;;
  esac
done
[[ -n "$model" && -f "$model" ]] || { echo "compare.sh: MODEL.gguf missing or not a file: '$model'" >&2; exit 2; }
for v in runs threads n_prompt n_gen reps; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "compare.sh: $v must be a number, got '${!v}'" >&2; exit 2; }
done
((runs >= 1 && threads >= 1 && reps >= 1)) || { echo "compare.sh: --runs, --threads, --reps must be >= 1" >&2; exit 2; }

if [[ -z "$kite" ]]; then
  for candidate in "$root/build/kite" "$root"/build-*/kite; do
    [[ -x "$candidate" ]] && { kite="$candidate"; break; }
  done
fi
[[ -x "$kite" ]] || { echo "compare.sh: no kite binary; build it or pass --kite PATH" >&2; exit 2; }
node_script="$root/bench/llamacpp/llama_bench.mjs"
if [[ -z "$llama_bench" && ! -d "$root/bench/llamacpp/node_modules/node-llama-cpp" ]]; then
  echo "compare.sh: run 'npm ci' in bench/llamacpp first (or pass --llama-bench PATH)" >&2; exit 2
fi

out="${out:-$(mktemp -d /tmp/kite-compare.XXXXXX)}"
mkdir -p "$out"

if [[ -z "$limits" ]]; then
  limits_bin="$(dirname "$kite")/machine_limits_bench"
  [[ -x "$limits_bin" ]] || { echo "compare.sh: no $limits_bin; build it or pass --limits JSON" >&2; exit 2; }
  echo "measuring machine limits ($limits_bin --max-threads $threads) ..." >&2
  "$limits_bin" --max-threads "$threads" > "$out/limits.json"
  limits="$out/limits.json"
fi

run_kite() {  # $1: output file
  /usr/bin/time -f %M -o "$1.rss" "$kite" bench -m "$model" -p "$n_prompt" -n "$n_gen" \
    -t "$threads" -r "$reps" --backend "$backend" --json > "$1"
}
run_peer() {
  if [[ -n "$llama_bench" ]]; then
    /usr/bin/time -f %M -o "$1.rss" "$llama_bench" -m "$model" -p "$n_prompt" -n "$n_gen" \
      -t "$threads" -r "$reps" -o json > "$1"
  else
    /usr/bin/time -f %M -o "$1.rss" node "$node_script" -m "$model" -p "$n_prompt" -n "$n_gen" \
      -t "$threads" -r "$reps" > "$1"
  fi
}

for ((i = 1; i <= runs; i++)); do
  echo "run $i/$runs ..." >&2
  if ((i % 2)); then run_kite "$out/kite.$i.json"; run_peer "$out/llama.$i.json"
  else run_peer "$out/llama.$i.json"; run_kite "$out/kite.$i.json"; fi
done

# The model's shape for the KV term, from Kite's reading of the file.
"$kite" inspect "$model" --json > "$out/inspect.json"

python3 - "$out" "$runs" "$threads" "$limits" "$n_prompt" "$n_gen" <<'EOF'
import json, statistics, sys
out, runs, threads, limits_path, n_prompt, n_gen = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
limits = json.load(open(limits_path))
inspect = json.load(open(f"{out}/inspect.json"))

def load(tool, i):
    tests = json.load(open(f"{out}/{tool}.{i}.json"))
    rss_kib = open(f"{out}/{tool}.{i}.json.rss").read().split()[-1]
    return tests, int(rss_kib) * 1024

def figure(t):
    return f"pp{t['n_prompt']}" if t["n_gen"] == 0 else f"tg{t['n_gen']}"

data = {"kite": [load("kite", i) for i in range(1, runs + 1)],
        "llama": [load("llama", i) for i in range(1, runs + 1)]}
first = data["kite"][0][0][0]
peer_first = data["llama"][0][0][0]
n_params = first["model_n_params"]
size = first["model_size"]
model_type = peer_first.get("model_type", first["model_type"])
quantized = any(q in model_type.upper() for q in ("Q4", "Q5", "Q6", "Q8", "Q2", "Q3", "IQ"))

# Shape for the KV term: GGUF keys (<arch>.block_count, ...) or an HF config.
meta = inspect.get("metadata") or inspect.get("config") or {}
if isinstance(meta, list):  # GGUF: [{key, type, value}]
    meta = {entry["key"]: entry["value"] for entry in meta}
def find(*suffixes):
    for key, value in meta.items():
        if any(key.endswith(s) for s in suffixes) and isinstance(value, (int, float)):
            return int(value)
    return 0
layers = find("block_count", "num_hidden_layers")
heads = find("attention.head_count", "num_attention_heads")
kv_heads = find("attention.head_count_kv", "num_key_value_heads") or heads
embd = find("embedding_length", "hidden_size")
head_dim = find("attention.key_length", "head_dim") or (embd // heads if heads else 0)
kv_per_position = layers * kv_heads * head_dim * 2 * 2  # K and V, f16
decode_bytes = size + kv_per_position * n_gen / 2

bw = limits["read_bandwidth_gb_s"].get(threads) or max(limits["read_bandwidth_gb_s"].values())
macs = (limits["int8_gmac_s"] if quantized else limits["fp32_gmac_s"])
peak = macs.get(threads) or max(macs.values())
limit = {"pp": peak * 1e9 / n_params, "tg": bw * 1e9 / decode_bytes}

print(f"model {first['model_filename']}: {model_type}, {size / 2**20:.1f} MiB, "
      f"{n_params / 1e6:.1f} M params; {threads} threads; {runs} runs; peer "
      f"{peer_first.get('cpu_variant', 'llama-bench')}")
print(f"limits: read {bw:.1f} GB/s, {'int8' if quantized else 'fp32'} {peak:.0f} GMAC/s; "
      f"decode bytes/token {decode_bytes / 2**20:.1f} MiB (KV {kv_per_position} B/position)")
print()
print(f"| {'figure':8} | {'kite t/s':>10} | {'llama.cpp t/s':>13} | {'kite/llama':>10} | "
      f"{'kite % limit':>12} | {'llama % limit':>13} | {'limit t/s':>10} |")
print(f"|{'-' * 10}|{'-' * 11}:|{'-' * 14}:|{'-' * 11}:|{'-' * 13}:|{'-' * 14}:|{'-' * 11}:|")
medians = {}
for index, test in enumerate(data["kite"][0][0]):
    name = figure(test)
    k = statistics.median(run[0][index]["avg_ts"] for run in data["kite"])
    l = statistics.median(run[0][index]["avg_ts"] for run in data["llama"])
    lim = limit["pp" if name.startswith("pp") else "tg"]
    medians[name] = {"kite_ts": k, "llama_ts": l, "limit_ts": lim}
    print(f"| {name:8} | {k:10.2f} | {l:13.2f} | {k / l:10.3f} | {100 * k / lim:11.1f}% | "
          f"{100 * l / lim:12.1f}% | {lim:10.1f} |")

def rss(tool):
    return statistics.median(max(run[1], max(t.get("peak_rss_bytes", 0) for t in run[0]))
                             for run in data[tool]) / 2**20
def ttft(tool):
    values = []
    for tests, _ in data[tool]:
        pp = [t for t in tests if t["n_gen"] == 0]
        if not pp or "load_ns" not in pp[0]:
            return None
        values.append((pp[0]["load_ns"] + pp[0]["avg_ns"]) / 1e6)
    return statistics.median(values)
print()
print(f"peak RSS (MiB): kite {rss('kite'):.1f}, llama.cpp {rss('llama'):.1f}")
kt, lt = ttft("kite"), ttft("llama")
if kt is not None:
    print(f"time to first token (load + pp{n_prompt}, ms): kite {kt:.1f}, "
          f"llama.cpp {'n/a' if lt is None else f'{lt:.1f}'}")
print(f"raw results: {out}")
# The same medians for scripts (bench/decode_table.sh): summary.json beside the raw results.
json.dump({"model": first["model_filename"], "model_type": model_type, "model_size": size,
           "model_n_params": n_params, "threads": int(threads), "runs": runs,
           "read_gb_s": bw, "peak_gmac_s": peak, "peak_kind": "int8" if quantized else "fp32",
           "decode_bytes": decode_bytes, "figures": medians},
          open(f"{out}/summary.json", "w"), indent=1)
EOF
