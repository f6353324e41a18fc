#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, seeded from tests/fuzz/corpus/<target>.
set -euo pipefail
build_dir=$1
seconds=${2:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
shopt -s nullglob
targets=("$build_dir"/*_fuzz)
if [ ${#targets[@]} -eq 0 ]; then echo "no fuzz targets built in $build_dir" >&2; exit 1; fi
for target in "${targets[@]}"; do
  name=$(basename "$target")
  work=$(mktemp -d)
  seeds=("$root/tests/fuzz/corpus/$name")
  [ -d "${seeds[0]}" ] || seeds=()
  echo "fuzzing $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=0 \
    "$work" "${seeds[@]}" > "$work.log" 2>&1 || { tail -40 "$work.log"; exit 1; }
  rm -rf "$work" "$work.log"
done
echo "fuzzing: ${#targets[@]} targets clean"
