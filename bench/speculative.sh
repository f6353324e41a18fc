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
#   4. a `kite synth` smollm2-135m Q8_0 (random weights: its greedy output from "The quick brown
#      fox" falls into one repeated token after a few, so repetitive text), n-gram drafts — a
#      memory-bound target, where a pass of k + 1 tokens costs closer to one decode step.
#   5. the same with the llama-3.2-1b shape in Q4_0, from the default extractive prompt.
#   6. with --big: the smollm2-135m shape in F16 as target, its own Q4_0 (same seed, so the same
#      weights rounded) as draft model.
#   7. with --big: a 0.9 B target (the smollm2-135m shape with 240 blocks, Q8_0), whose blocks
#      from 30 on are quiet (`kite synth --quiet-from 30 --quiet-scale 0.03`: their output
#      projections scaled down, so that it agrees with the 30-block model on most tokens), and
#      the 30-block 135M in Q4_0 (same seed) as draft model: a draft ~10x cheaper than its
#      target, as a 1B draft is for an 8B model.
#   8. with --big: a draft model that is never right, the back-off case for draft models (must
#      stay within 5% of plain): a 60-block smollm2-135m in Q8_0 (not quiet: its blocks after
#      the 30th change every prediction) with the 30-block 135M in Q4_0 as draft, 100 tokens.
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
    *) sed -n '2,26p' "$0"; exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$work"
demo="$here/models/demo"
bench() { "$kite" bench -t 2 -r "$reps" "$@" | grep '^| '; }

# The first 450 bytes of held-out fortunes: text the demo model never saw, few repeats.
head -c 450 "$demo/heldout.txt" >"$work/heldout_prompt.txt"
[[ -f "$work/demo_q8_0.gguf" ]] || "$kite" quantize "$demo" --type q8_0 --pure -o "$work/demo_q8_0.gguf" >/dev/null 2>&1
for preset in smollm2-135m:q8_0 smollm2-135m:q4_0 llama-3.2-1b:q4_0; do
  file="$work/${preset%%:*}_${preset##*:}.gguf"
  [[ -f "$file" ]] || "$kite" synth --preset "${preset%%:*}" --type "${preset##*:}" -o "$file" -q
done
echo "The quick brown fox" >"$work/fox.txt"

bench -m "$demo" --spec ngram -f "$here/bench/speculative_quote.txt" -n "$n_gen"
bench -m "$demo" --spec ngram --ngram-min 1 -f "$work/heldout_prompt.txt" -n 100 | tail -1
bench -m "$demo" --draft "$work/demo_q8_0.gguf" -f "$here/bench/speculative_quote.txt" -n "$n_gen" | tail -1
bench -m "$work/smollm2-135m_q8_0.gguf" --spec ngram -f "$work/fox.txt" -n "$n_gen" | tail -1
bench -m "$work/llama-3.2-1b_q4_0.gguf" --spec ngram -n 64 | tail -1
if ((big)); then
  [[ -f "$work/smollm2-135m_f16.gguf" ]] ||
    "$kite" synth --preset smollm2-135m --type f16 -o "$work/smollm2-135m_f16.gguf" -q
  bench -m "$work/smollm2-135m_f16.gguf" --draft "$work/smollm2-135m_q4_0.gguf" -n 64 | tail -1
  quiet="$work/smollm2-240-blocks-quiet-from-30_q8_0.gguf"
  [[ -f "$quiet" ]] || "$kite" synth --preset smollm2-135m --type q8_0 --layers 240 \
    --quiet-from 30 --quiet-scale 0.03 -o "$quiet" -q
  bench -m "$quiet" --draft "$work/smollm2-135m_q4_0.gguf" -n "$n_gen" | tail -1
  deeper="$work/smollm2-60-blocks_q8_0.gguf"
  [[ -f "$deeper" ]] || "$kite" synth --preset smollm2-135m --type q8_0 --layers 60 -o "$deeper" -q
  bench -m "$deeper" --draft "$work/smollm2-135m_q4_0.gguf" -n 100 | tail -1
fi
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(date -u +%F)"
