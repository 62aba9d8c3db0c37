#!/usr/bin/env bash
# The web row's CPU a photo as a multiple of its floor, the floor measured in the same rounds:
# bench/run.sh measures tjbench once, after the set's runs, so on a machine shared with others
# the ratio moves with whatever ran then (1.20 to 1.31 for the same binary in runs an hour apart).
# Here each round runs photofinish (PF), then PF_BEFORE when set, then tools/jpeg-floor.c (libjpeg's
# full-size decode of the same 20 sources and its encode of the same 20 outputs, CPU ms a photo),
# and every ratio is taken within its round; it prints each round and the medians.
#
#   bench/tools/paired-floor.sh [CORPUS] [ROUNDS]     default /tmp/pf-bench/corpus, 8 rounds (+1 warm-up)
#
# Environment: PF (default .build/release/photofinish), PF_BEFORE (optional), WORKERS (default 2).
# Needs a C compiler, libjpeg's headers (libjpeg62-turbo-dev, which the build needs anyway), djpeg.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
C=${1:-/tmp/pf-bench/corpus}; ROUNDS=${2:-8}
PF=${PF:-$HERE/../../.build/release/photofinish}
TMP=$(mktemp -d /tmp/pf-paired-floor.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cc -O2 "$HERE/jpeg-floor.c" -ljpeg -o "$TMP/jpeg-floor"
J=("$C"/jpeg12/*.jpg)
TEMPLATE=$HERE/../web.json5
# the outputs' pixels, once: photofinish's own outputs of the set, as PPM
"$PF" run --template "$TEMPLATE" --out "$TMP/first" --workers "${WORKERS:-2}" "${J[@]}" > /dev/null
mkdir "$TMP/ppm"
for f in "$TMP"/first/*/*.jpg; do djpeg -outfile "$TMP/ppm/$(basename "${f%.jpg}").ppm" "$f"; done
cpu_ms() { # BINARY: CPU ms a photo of one run of the set
  rm -rf "$TMP/out"
  /usr/bin/time -f '%U %S' -o "$TMP/time" "$1" run --template "$TEMPLATE" --out "$TMP/out" --workers "${WORKERS:-2}" "${J[@]}" > /dev/null 2>&1
  awk -v n=${#J[@]} '{ printf "%.1f", ($1 + $2) * 1000 / n }' "$TMP/time"
}
echo "round  photofinish  before  floor (decode + encode)  ×floor  before ×floor  load"
for r in $(seq 0 "$ROUNDS"); do
  a=$(cpu_ms "$PF"); b=nan
  [[ -n ${PF_BEFORE:-} ]] && b=$(cpu_ms "$PF_BEFORE")
  read -r dec enc < <("$TMP/jpeg-floor" "${J[@]}" -- "$TMP"/ppm/*.ppm)
  (( r == 0 )) && continue   # warm-up
  echo "$r $a $b $dec $enc $(cut -d' ' -f1 /proc/loadavg)" >> "$TMP/rounds"
  awk '{ f = $4 + $5; printf "%5d  %11.1f  %6s  %6.1f (%.1f + %.1f)  %9.3f  %13s  %s\n", $1, $2, $3, f, $4, $5, $2 / f,
         ($3 == "nan" ? "n/a" : sprintf("%.3f", $3 / f)), $6 }' <(tail -1 "$TMP/rounds")
done
python3 - "$TMP/rounds" <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(xs): return statistics.median(xs)
a = [float(r[1]) / (float(r[3]) + float(r[4])) for r in rows]
print(f"median ×floor: photofinish {med(a):.3f}", end="")
if rows[0][2] != "nan":
    b = [float(r[2]) / (float(r[3]) + float(r[4])) for r in rows]
    ab = [float(r[1]) / float(r[2]) for r in rows]
    print(f", before {med(b):.3f}; photofinish / before, round by round: {med(ab):.3f}", end="")
print(f"; floor {med([float(r[3]) + float(r[4]) for r in rows]):.1f} ms a photo")
PY
