#!/bin/bash
# `kite profile --html` opens in headless Chromium (Debian's `chromium`) without console errors and
# shows its plots. Usage: profile_html_chromium.sh KITE OUT_DIR. The screenshot is left in OUT_DIR
# (a test artifact, not committed).
set -euo pipefail
kite=$1
out=$2
mkdir -p "$out"
html="$out/profile_report.html"
"$kite" profile llama-3-8b --chip sa8295p --html "$html" > /dev/null
flags=(--headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --window-size=1100,2400)
timeout 120 chromium "${flags[@]}" --screenshot="$out/profile_report.png" "file://$html" \
  2> "$out/chromium.log" > /dev/null
timeout 120 chromium "${flags[@]}" --dump-dom "file://$html" 2>> "$out/chromium.log" > "$out/dom.html"
# Chromium logs the page's console messages and failed loads as "CONSOLE" / "Failed to load".
if grep -E "CONSOLE|Uncaught|Failed to load" "$out/chromium.log"; then
  echo "console errors while loading $html" >&2
  exit 1
fi
svgs=$(grep -o "<svg" "$out/dom.html" | wc -l)
if [ "$svgs" -ne 6 ]; then
  echo "expected 6 plots in the rendered page, found $svgs" >&2
  exit 1
fi
[ -s "$out/profile_report.png" ] || { echo "no screenshot" >&2; exit 1; }
echo "ok: 6 plots, no console errors, screenshot $out/profile_report.png"
