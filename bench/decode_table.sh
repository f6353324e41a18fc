#!/usr/bin/env bash
# The decode/prefill table of issue 14, every figure made here by this one script: for each model
# shape, `kite synth` writes an F32 file with the real shapes and random weights; llama.cpp's own
# llama-quantize (not `kite quantize`) makes each file type from it, as users download them
# (a 1B Q4_0 file then has a Q6_K tied head); bench/compare.sh runs `kite bench` and llama-bench
# on each file, alternating, median of --runs. Prints one markdown table: Kite t/s, llama.cpp t/s,
# their ratio and Kite's % of this machine's limit (tgN: the read bandwidth over the bytes read per
# token; ppP: the int8 dot-product peak on quantized files, the FP32 FMA peak on float files),
# headed by the CPU, Kite's SIMD target and the limits build/machine_limits_bench measured.
#
#   bench/decode_table.sh [--dir /tmp/bench] [--runs 5] [--threads 2] [-p 512] [-n 128]
#                         [--presets "llama-3.2-1b smollm2-135m"] [--types "q4_0 q4_k_m ..."]
#                         [--llama-bin DIR] [--kite build/kite]
#
# --llama-bin: a folder with llama-quantize and llama-bench (default: bench/build_llamacpp_tools.sh
# builds them, GGML_NATIVE, from the llama.cpp source node-llama-cpp@3.21.1 bundles; needs
# `make llamacpp`). Files stay in --dir (about 25 GB for both presets: keep it out of the
# repository); a file already there is reused. Rows are printed as each file finishes; a file
# that fails (a type llama-quantize does not make, a type Kite refuses) gets a row naming the
# error and the table goes on. Also written to DIR/decode_table.md, with the load average before
# and after under the table. Over an hour at 5 runs (estimated: the 1B F16 and BF16 files and
# the files whose types Kite runs on ref take longest).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir=/tmp/bench runs=5 threads=2 n_prompt=512 n_gen=128 llama_bin="" kite="$root/build/kite"
presets="llama-3.2-1b smollm2-135m"
types="q4_0 q4_k_m q6_k q8_0 f16 bf16 q4_1 q5_0 q5_1 q5_k_m iq4_nl iq4_xs"
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --threads|-t) threads="$2"; shift 2 ;;
    -p) n_prompt="$2"; shift 2 ;;
    -n) n_gen="$2"; shift 2 ;;
    --presets) presets="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --llama-bin) llama_bin="$2"; shift 2 ;;
    --kite) kite="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "decode_table.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for v in runs threads n_prompt n_gen; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "decode_table.sh: --${v/n_prompt/p} must be a positive number, got '${!v}'" >&2; exit 2; }
done
[[ -x "$kite" ]] || { echo "decode_table.sh: no kite binary at $kite (make build, or --kite PATH)" >&2; exit 2; }
limits_bin="$(dirname "$kite")/machine_limits_bench"
[[ -x "$limits_bin" ]] || { echo "decode_table.sh: no $limits_bin (build the machine_limits_bench target)" >&2; exit 2; }
if [[ -z "$llama_bin" ]]; then
  echo "building llama-quantize and llama-bench (bench/build_llamacpp_tools.sh) ..." >&2
  llama_bin="$("$root/bench/build_llamacpp_tools.sh" | tail -1)"
fi
for tool in llama-quantize llama-bench; do
  [[ -x "$llama_bin/$tool" ]] || { echo "decode_table.sh: no $tool in --llama-bin $llama_bin" >&2; exit 2; }
done
mkdir -p "$dir/results"

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "measuring machine limits ($limits_bin --max-threads $threads) ..." >&2
"$limits_bin" --max-threads "$threads" > "$dir/limits.json.part"
mv "$dir/limits.json.part" "$dir/limits.json"

# The header: which CPU (model name, family/model, the ISA features that pick kernels), Kite's
# SIMD target and the limits at --threads.
python3 - "$dir/limits.json" "$threads" <<'EOF' | tee "$dir/decode_table.md"
import json, sys
limits, threads = json.load(open(sys.argv[1])), sys.argv[2]
info = {}
for line in open("/proc/cpuinfo"):
    key, _, value = line.partition(":")
    info.setdefault(key.strip(), value.strip())
wanted = ("avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "asimddp", "i8mm", "sve")
features = [f for f in info.get("flags", info.get("Features", "")).split() if f in wanted]
print(f"CPU: {info.get('model name', 'unknown')} (family {info.get('cpu family', '?')}, "
      f"model {info.get('model', '?')}), {info.get('siblings', '?')} logical CPUs, "
      f"{' '.join(features) or 'no int8 dot-product extension'}; Kite kernels: "
      f"{limits.get('kite_kernels', '?')}")
print(f"Limits at {threads} threads (machine_limits_bench): read "
      f"{limits['read_bandwidth_gb_s'][threads]:.1f} GB/s, int8 "
      f"{limits['int8_gmac_s'][threads]:.0f} GMAC/s ({limits['int8_dot']}), FP32 "
      f"{limits['fp32_gmac_s'][threads]:.0f} GMAC/s ({limits['fp32_fma']})")
print()
print("| model | type | test | Kite t/s | llama.cpp t/s | Kite / llama.cpp | Kite % of limit |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
EOF

row() {  # $1 preset, $2 type, $3 summary.json or an error message
  if [[ -f "$3" ]]; then
    python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
preset, ftype, summary = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
for test, f in summary["figures"].items():
    limit = "read" if test.startswith("tg") else summary["peak_kind"]
    print(f"| {preset} | {ftype.upper()} | {test} | {f['kite_ts']:.1f} | {f['llama_ts']:.1f} | "
          f"{f['kite_ts'] / f['llama_ts']:.2f} | {100 * f['kite_ts'] / f['limit_ts']:.0f}% of {limit} |")
EOF
  else
    echo "| $1 | ${2^^} | — | failed: $3 | | | |"
  fi
}

# The first line of a log that says what went wrong (for a failed row).
reason() { grep -m1 -i -E "error|fail|unknown|invalid|unsupported|refus" "$1" | tr '|' '/' | cut -c1-160 || true; }

for preset in $presets; do
  source="$dir/$preset-f32.gguf"
  if [[ ! -f "$source" ]]; then
    echo "kite synth --preset $preset --type f32 ..." >&2
    "$kite" synth --preset "$preset" --type f32 -q -o "$source.part.gguf"
    mv "$source.part.gguf" "$source"
  fi
  for type in $types; do
    name="$preset-$type" file="$dir/$preset-$type.gguf" log="$dir/results/$preset-$type.log"
    if [[ ! -f "$file" ]]; then
      echo "llama-quantize $name ..." >&2
      if ! "$llama_bin/llama-quantize" "$source" "$file.part.gguf" "${type^^}" "$(nproc)" > "$log" 2>&1; then
        rm -f "$file.part.gguf"
        row "$preset" "$type" "llama-quantize: $(reason "$log")" | tee -a "$dir/decode_table.md"
        continue
      fi
      mv "$file.part.gguf" "$file"
    fi
    echo "compare.sh $name ($runs runs) ..." >&2
    rm -rf "$dir/results/$name"
    if "$root/bench/compare.sh" "$file" --runs "$runs" --threads "$threads" -p "$n_prompt" -n "$n_gen" \
         --kite "$kite" --llama-bench "$llama_bin/llama-bench" --limits "$dir/limits.json" \
         --out "$dir/results/$name" > "$dir/results/$name.txt" 2> "$log"; then
      row "$preset" "$type" "$dir/results/$name/summary.json"
    else
      row "$preset" "$type" "compare.sh: $(reason "$log") (log: $log)"
    fi | tee -a "$dir/decode_table.md"
  done
done

{
  echo
  echo "$threads threads, median of $runs alternating runs per figure; load average before $load_before," \
       "after $(cut -d' ' -f1-3 /proc/loadavg); llama.cpp: llama-bench from $llama_bin."
} | tee -a "$dir/decode_table.md"
