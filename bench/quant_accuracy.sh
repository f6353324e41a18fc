#!/usr/bin/env bash
# Accuracy of Kite's quantization recipes against the float model and against llama.cpp's own
# quantizer (llama-imatrix + llama-quantize) on the same model and text, judged by one evaluator
# (`kite eval compare`: PPL ratio and KL divergence over the whole vocabulary, per token, against
# the float model's distributions) so that the numbers compare.
#
#   bench/quant_accuracy.sh [--model HF_FOLDER] [--llama-bin DIR] [--work DIR] [--recipes LIST]
#
# Protocol:
#   model   by default the bundled demo model given LLM-like outlier channels by
#           tools/make_outlier_model.py (function-preserving; MLP padded to 768 so k-quants fit);
#           the float reference is that folder converted to F32 GGUF by `kite convert`.
#   text    models/demo/heldout.txt: its first 40% (by lines) is the calibration text for every
#           recipe, Kite's and llama.cpp's alike; the rest is scored, in windows of 256 tokens
#           (the demo's context), llama.cpp's protocol (BOS first, the second half of each window
#           scored), every window of the text.
#   peer    llama-imatrix and llama-quantize built from the llama.cpp source bundled in the pinned
#           node-llama-cpp (bench/build_llamacpp_tools.sh), outside the repository.
# Prints a markdown table: recipe, bits/weight over the block linears, file size, PPL change,
# mean / p99 KLD, top-1 agreement.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kite="$root/build/kite"
work=${TMPDIR:-/tmp}/kite-quant-accuracy
model=""
llama_bin=${LLAMA_BIN:-$HOME/.cache/kite-bench/llama.cpp/build/bin}
recipes="q4_0 q4_k_m q4_k_m+imatrix q4_k_m+llamaimatrix q4_k_s+imatrix+awq q4_0+hadamard+gptq lpbq32+a16+kv8 lpbq32+hadamard+gptq+a16+kv8 int8+a16 int8+a16+awq int8+a8 int8+a8+smoothquant"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --llama-bin) llama_bin="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --recipes) recipes="$2"; shift 2 ;;
    --kite) kite="$2"; shift 2 ;;
    *) echo "quant_accuracy.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$work"
if [[ -z "$model" ]]; then
  model="$work/demo-outliers"
  [[ -f "$model/model.safetensors" ]] ||
    /usr/bin/python3 "$root/tools/make_outlier_model.py" "$root/models/demo" "$model" >&2
fi
text="$root/models/demo/heldout.txt"
lines=$(wc -l < "$text")
head -n $((lines * 4 / 10)) "$text" > "$work/calib.txt"
tail -n +$((lines * 4 / 10 + 1)) "$text" > "$work/eval.txt"
float="$work/float-f32.gguf"
[[ -f "$float" ]] || "$kite" convert "$model" -o "$float" --type f32 -q
calib_tokens=4096
window=256

# Kite's recipes: "+"-separated words, the first the --type.
kite_args() {
  local recipe="$1" words
  IFS=+ read -ra words <<< "$recipe"
  local args=(--type "${words[0]}") calibrate=0
  for w in "${words[@]:1}"; do
    case "$w" in
      imatrix) args+=(--imatrix "$work/kite.imatrix.gguf") ;;
      llamaimatrix) args+=(--imatrix "$work/llama.imatrix.gguf") ;;  # the peer's, for a same-input check
      a16) args+=(--act-bits 16); calibrate=1 ;;
      a8) args+=(--act-bits 8); calibrate=1 ;;
      kv8) args+=(--kv-bits 8) ;;
      hadamard) args+=(--hadamard) ;;
      gptq | awq | smoothquant | seqmse) args+=("--$w"); calibrate=1 ;;
      *) echo "quant_accuracy.sh: unknown recipe word $w" >&2; exit 2 ;;
    esac
  done
  ((calibrate)) && args+=(--calib "$work/calib.txt" --calib-tokens "$calib_tokens")
  printf '%s\n' "${args[@]}"
}

[[ -f "$work/kite.imatrix.gguf" ]] ||
  "$kite" imatrix -m "$float" --calib "$work/calib.txt" --calib-tokens "$calib_tokens" \
    -o "$work/kite.imatrix.gguf" 2>/dev/null >&2

peer_imatrix="$work/llama.imatrix.gguf"
if [[ -x "$llama_bin/llama-imatrix" && ! -f "$peer_imatrix" ]]; then
  "$llama_bin/llama-imatrix" -m "$float" -f "$work/calib.txt" -c "$window" \
    --chunks $((calib_tokens / window)) -o "$peer_imatrix" -t 2 > "$work/llama-imatrix.log" 2>&1
fi

declare -A files
for recipe in $recipes; do
  out="$work/kite-${recipe//+/-}.gguf"
  mapfile -t args < <(kite_args "$recipe")
  start=$(date +%s.%N)
  "$kite" quantize "$float" -o "$out" "${args[@]}" -q > /dev/null
  echo "kite $recipe: $(echo "$(date +%s.%N) - $start" | bc) s" >&2
  files["kite $recipe"]="$out"
done

if [[ -x "$llama_bin/llama-quantize" ]]; then
  "$llama_bin/llama-quantize" "$float" "$work/llama-q4_0.gguf" Q4_0 2 > /dev/null 2>&1
  "$llama_bin/llama-quantize" "$float" "$work/llama-q4_k_m.gguf" Q4_K_M 2 > /dev/null 2>&1
  "$llama_bin/llama-quantize" --imatrix "$peer_imatrix" "$float" "$work/llama-q4_k_m-imatrix.gguf" \
    Q4_K_M 2 > /dev/null 2>&1
  files["llama.cpp q4_0"]="$work/llama-q4_0.gguf"
  files["llama.cpp q4_k_m"]="$work/llama-q4_k_m.gguf"
  files["llama.cpp q4_k_m+imatrix"]="$work/llama-q4_k_m-imatrix.gguf"
else
  echo "quant_accuracy.sh: no llama-quantize in $llama_bin (bench/build_llamacpp_tools.sh); peer rows left out" >&2
fi

"$kite" inspect "$float" --json > "$work/float.inspect.json"
# Bits per weight over the block linears: every byte a file spends on blk.* tensors other than
# norms (NPU layouts' scale, offset and multiplier companions included), over the float
# model's 2-D block weights' element count.
block_bpw() {
  "$kite" inspect "$1" --json | python3 -c '
import json, math, sys
q = json.load(sys.stdin)
f = json.load(open(sys.argv[1]))
elements = sum(math.prod(t["shape"]) for t in f["tensors"]
               if t["name"].startswith("blk.") and len(t["shape"]) == 2)
bytes_ = sum(t["bytes"] for t in q["tensors"]
             if t["name"].startswith("blk.") and "norm" not in t["name"])
print(f"{8 * bytes_ / elements:.3f}")' "$work/float.inspect.json"
}

echo "| recipe | bits/weight (block linears) | file | PPL vs float | mean KLD | p99 KLD | same top-1 |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for name in $(printf '%s\n' "${!files[@]}" | sed 's/ /@/' | sort); do
  name=${name/@/ }
  file=${files[$name]}
  "$kite" eval compare -m "$file" --ref "$float" -f "$work/eval.txt" --ctx "$window" --chunks 0 \
    --ref-logits "$work/ref.logits" --json 2>/dev/null > "$work/compare.json"
  jq -r --arg name "$name" --arg bpw "$(block_bpw "$file")" --arg size "$(stat -c %s "$file")" \
    '"| \($name) | \($bpw) | \(($size|tonumber)/1048576*100|round/100) MiB | \((.ppl_ratio.value - 1) * 10000 | round / 100)% ± \(.ppl_ratio.error * 10000 | round / 100) | \(.kld.value * 1e4 | round / 1e4) | \(.kld_quantiles[] | select(.fraction == 0.99) | .value * 1e4 | round / 1e4) | \(.same_top.value * 1000 | round / 10)% |"' \
    "$work/compare.json"
done
