#!/bin/sh
# Writes testdata/calib/kjv-genesis.txt, the calibration text `kite quantize` and `kite imatrix`
# use when no --calib is given: the Book of Genesis of the King James Version from Debian's
# bible-kjv-text package (read by its bible-kjv program), one verse a line without its number,
# each chapter under a "Genesis N" line, chapters apart by a blank line.
#   apt-get install bible-kjv && sh tools/make_calib_text.sh
set -eu
out="$(dirname "$0")/../testdata/calib/kjv-genesis.txt"
bible -l0 "gen1:1-50:26" | python3 -c '
import re, sys
out = []
for line in sys.stdin.read().split("\n"):
    if not line.strip():
        continue
    verse = re.match(r"^\s+\d+ (.*)$", line)
    if verse:
        out.append(verse.group(1).rstrip())
    else:
        if out:
            out.append("")
        out.append(line.strip())
sys.stdout.write("\n".join(out) + "\n")
' > "$out"
