#!/usr/bin/env bash
# Speculative decoding's figures (README "Speculative decoding"): `kite bench --spec` on models
# made here, each line plain greedy decoding against speculative decoding of the same prompt,
# median of -r alternating repetitions after a warm-up of each (cli/bench_speculative.h).
#
#   bench/speculative.sh [KITE] [--reps 5] [-n 128] [--work DIR] [--big]
#
#   1. demo model, n-gram drafts, an extractive prompt (bench/speculative_quote.txt: a passage,
#      then its start again).
#   2. demo model, n-gram drafts from 1-grams on held-out fortunes: drafts mostly rejected, the
#      back-off case (must stay within 5% of plain).
#   3. demo model (F16) with its own Q8_0 quantization as draft model.
#   4. a `kite synth` llama-3.2-1b Q4_0 (random weights: its greedy output falls into loops, so
#      repetitive text), n-gram drafts — a memory-bound target, where a pass of k + 1 tokens costs
#      closer to one decode step.
#   5. with --big: that shape in F16 as target, its own Q4_0 (same seed, same weights) as draft.
set -euo pipefail

kite=build/kite
if (($#)) && [[ "$1" != -* ]]; then kite="$1"; shift; fi
reps=5 n_gen=128 work=/tmp/kite_speculative big=0
while (($#)); do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    -n) n_gen="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --big) big=1; shift ;;
    *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$work"
demo="$here/models/demo"
bench() { "$kite" bench -t 2 -r "$reps" "$@" | grep '^| '; }

# The first 450 bytes of held-out fortunes: text the demo model never saw, few repeats.
head -c 450 "$demo/heldout.txt" >"$work/heldout_prompt.txt"
[[ -f "$work/demo_q8_0.gguf" ]] || "$kite" quantize "$demo" --type q8_0 --pure -o "$work/demo_q8_0.gguf" >/dev/null 2>&1
[[ -f "$work/llama1b_q4_0.gguf" ]] ||
  "$kite" synth --preset llama-3.2-1b --type q4_0 -o "$work/llama1b_q4_0.gguf" -q

bench -m "$demo" --spec ngram -f "$here/bench/speculative_quote.txt" -n "$n_gen"
bench -m "$demo" --spec ngram --ngram-min 1 -f "$work/heldout_prompt.txt" -n 100 | tail -1
bench -m "$demo" --draft "$work/demo_q8_0.gguf" -f "$here/bench/speculative_quote.txt" -n "$n_gen" | tail -1
bench -m "$work/llama1b_q4_0.gguf" --spec ngram -n 64 | tail -1
if ((big)); then
  [[ -f "$work/llama1b_f16.gguf" ]] ||
    "$kite" synth --preset llama-3.2-1b --type f16 -o "$work/llama1b_f16.gguf" -q
  bench -m "$work/llama1b_f16.gguf" --draft "$work/llama1b_q4_0.gguf" -n 64 | tail -1
fi
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(date -u +%F)"
