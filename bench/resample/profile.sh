#!/usr/bin/env bash
# Where each millisecond of a 12 MP web+marks photo goes: photofinish run --workers 1 on the bench's
# 20 × 12 MP JPEGs under `perf record` (software clock, DWARF call graphs: works in a VM without
# hardware counters), each sample put in one step of the recipe by profile.py, scaled to the run's
# own CPU time (user + system, GNU time). Then libjpeg-turbo alone, as the floor: djpeg of the same
# files (full scale, RGB) and cjpeg of 2048 px outputs (q88, 4:2:0), CPU time a photo.
#
#   bench/resample/profile.sh [CORPUS] [TEMPLATE]   default /tmp/pf-bench/corpus, bench/web-marks.json5
#
# Environment: PF (photofinish binary, default .build/release/photofinish), PHOTOFINISH_SIMD as for
# photofinish. Needs perf (linux-perf), djpeg and cjpeg (libjpeg-turbo-progs), GNU time:
# scripts/bootstrap --bench.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
C=${1:-/tmp/pf-bench/corpus}; TPL=${2:-$HERE/../web-marks.json5}
PF=${PF:-$HERE/../../.build/release/photofinish}
FILES=("$C"/jpeg12/*.jpg)
TMP=$(mktemp -d /tmp/pf-profile.XXXXXX); trap 'rm -rf "$TMP"' EXIT
N=${#FILES[@]}

/usr/bin/time -f '%U %S' -o "$TMP/time" perf record -q -e cpu-clock -F 1000 --call-graph dwarf,16384 \
    -o "$TMP/perf.data" "$PF" run --template "$TPL" --out "$TMP/out" --workers 1 "${FILES[@]}" > /dev/null 2>&1
# perf's own start-up and writing are in the time too: time the run alone for the scale
/usr/bin/time -f '%U %S' -o "$TMP/time" "$PF" run --template "$TPL" --out "$TMP/out2" --workers 1 "${FILES[@]}" > /dev/null 2>&1
read -r u s < "$TMP/time"
cpu=$(echo "$u + $s" | bc)
echo "photofinish $(git -C "$HERE/../.." rev-parse --short HEAD 2>/dev/null || echo '?'), $N photos, --workers 1: $cpu CPU s (user $u, system $s), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# libjpeg-turbo alone on the same work: the floor, and where in the library decode and encode run
out=$(find "$TMP/out2" -name '*.jpg' ! -path '*/thumbs/*' | head -1)
djpeg -rgb -ppm "$out" > "$TMP/small.ppm"
leaves() { # perf.data -> the libjpeg offsets its samples were taken at (a call chain's leaf frame
  # prints the offset in the library, as in photofinish's samples)
  perf script -F ip,dso -i "$1" 2>/dev/null | awk 'BEGIN { RS = "" } { split($0, f, "\n"); if (f[1] ~ /libjpeg/) { split(f[1], w, " "); print w[1] } }'
}
perf record -q -e cpu-clock -F 4000 -g -o "$TMP/djpeg.data" \
    sh -c 'for f in "$@"; do djpeg -rgb -ppm "$f" > /dev/null; done' sh "${FILES[@]}"
leaves "$TMP/djpeg.data" > "$TMP/decode.txt"
/usr/bin/time -f '%U %S' -o "$TMP/time" sh -c 'for f in "$@"; do djpeg -rgb -ppm "$f" > /dev/null; done' sh "${FILES[@]}"
read -r u s < "$TMP/time"
d=$(echo "scale=1; ($u + $s) * 1000 / $N" | bc)
perf record -q -e cpu-clock -F 4000 -g -o "$TMP/cjpeg.data" \
    sh -c 'for i in $(seq 40); do cjpeg -quality 88 -sample 2x2 "$1" > /dev/null; done' sh "$TMP/small.ppm"
leaves "$TMP/cjpeg.data" > "$TMP/encode.txt"
/usr/bin/time -f '%U %S' -o "$TMP/time" sh -c 'for i in $(seq 20); do cjpeg -quality 88 -sample 2x2 "$1" > /dev/null; done' sh "$TMP/small.ppm"
read -r u s < "$TMP/time"
e=$(echo "scale=1; ($u + $s) * 1000 / 20" | bc)

echo
perf script -F comm,tid,ip,sym,dso,period,event -i "$TMP/perf.data" 2>/dev/null \
    | python3 "$HERE/profile.py" "$N" "$cpu" "$TMP/decode.txt" "$TMP/encode.txt"
echo
echo "libjpeg-turbo alone (djpeg, cjpeg; their own start-up and file writing included): decode $d ms a photo (full scale, RGB), encode $e ms (2048 px, q88, 4:2:0)"
