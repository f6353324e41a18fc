#!/usr/bin/env bash
# `make demo`: the main job on the bundled model. Text generation (`kite run`) is not built yet,
# so the demo shows what works today: inspecting the bundled model and a tokenizer round trip.
set -euo pipefail
kite=${1:-build/kite}
model=models/demo
prompt="The secret of life is"

echo "== kite inspect $model"
"$kite" inspect "$model"
echo
echo "== kite tokenize -m $model -p \"$prompt\""
ids=$("$kite" tokenize -m "$model" -p "$prompt" --json)
echo "$ids"
echo
echo "== kite detokenize -m $model <<< '$ids'"
"$kite" detokenize -m "$model" <<< "$ids"
echo
