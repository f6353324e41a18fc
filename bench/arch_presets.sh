#!/bin/bash
# Decode speed per byte read of each new architecture's `kite synth` preset against the Llama-
# family preset of its size (qwen3-0.6b / qwen2.5-0.5b, gemma-3-1b / llama-3.2-1b, phi-4-mini /
# llama-3.2-3b), cut to 4 layers and a 32000-token vocabulary so that the files are small, q8_0.
# Prints, per run: preset, round, tokens/s, bytes read per token (the file), their product in
# GB/s. Rounds alternate the models; take medians.
#   bench/arch_presets.sh [KITE] [ROUNDS]
set -euo pipefail
K=${1:-build/kite}
ROUNDS=${2:-3}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
PRESETS="qwen3-0.6b qwen2.5-0.5b gemma-3-1b llama-3.2-1b phi-4-mini llama-3.2-3b"
for p in $PRESETS; do
  "$K" synth --preset "$p" --type q8_0 --layers 4 --vocab 32000 -o "$D/$p.gguf" -q
done
for round in $(seq "$ROUNDS"); do
  for p in $PRESETS; do
    "$K" bench -m "$D/$p.gguf" -p 0 -n 16 -t 2 -r 3 --json 2>/dev/null | python3 -c "
import json, sys
for r in json.load(sys.stdin):
  print('$p', $round, round(r['avg_ts'], 2), r['model_size'],
        round(r['avg_ts'] * r['model_size'] / 1e9, 3))"
  done
done
