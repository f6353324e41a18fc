#!/usr/bin/env bash
# `make demo`: the main job on the bundled model: `kite run` streams a continuation of a prompt
# from models/demo (a 6.5M-parameter Llama trained on Debian's fortunes; see its README).
# Fortunes end with a line holding "%", so that is the stop string.
set -euo pipefail
kite=${1:-build/kite}
model=models/demo
prompt=${KITE_DEMO_PROMPT:-"The secret of life is"}

echo "== kite inspect $model (summary)"
"$kite" inspect "$model" | sed -n '1,12p'
echo
echo "== kite run -m $model -p \"$prompt\" -n 96 --temp 0.7 --top-p 0.9 --seed 7 --stop '\\n%'"
"$kite" run -m "$model" -p "$prompt" -n 96 --temp 0.7 --top-p 0.9 --seed 7 --stop '\n%'
