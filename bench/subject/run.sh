#!/bin/sh
# The subject analysis' cost per 12 MP photo, next to the whole recipe (issue 9: at most 5 %
# of a 12 MP web photo's CPU time). CPU time, so it holds on a loaded machine.
#
#   bench/subject/run.sh [CORPUS]     default /tmp/pf-bench/corpus (bench/make-corpus.sh makes it)
#
# Needs a release build (swift build -c release) and perf (linux-perf). N= photos (default 10).
# Prints, per 12 MP photo (user+sys CPU, one worker):
#   web        bench/web.json5: resize to 2048, JPEG q88 (the "12 MP web photo")
#   center     a crop pack (1:1, 4:5, 9:16 at 1080) with cropFocus "center"
#   subject    the same pack placed on the subject (the default)
# and, from a perf profile of the subject run (cpu-clock samples), the share and the
# milliseconds per photo spent in the analysis (AttentionMap, SubjectFinder, CropPlacement, and
# libm's cbrtf, which only the attention map calls here).
set -e
cd "$(dirname "$0")/../.."
PF=${PF:-.build/release/photofinish}
CORPUS=${1:-/tmp/pf-bench/corpus}
N=${N:-10}
[ -x "$PF" ] || { echo "no release build at $PF (swift build -c release)"; exit 2; }
[ -d "$CORPUS/jpeg12" ] || bench/make-corpus.sh "$CORPUS"
files=$(ls "$CORPUS"/jpeg12/*.jpg | head -n "$N")
count=$(echo "$files" | wc -l)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for focus in center subject; do
  printf '{ version: 1, resize: { longSide: 1080 }, cropFocus: "%s", crops: ["1:1", "4:5", "9:16"],
            output: { quality: 88, metadata: "strip-all" } }\n' "$focus" > "$tmp/$focus.json5"
done
cpu() {  # cpu NAME TEMPLATE: CPU ms per photo
  /usr/bin/time -f "%U %S" -o "$tmp/$1.time" "$PF" run --template "$2" --out "$tmp/out-$1" --workers 1 $files >/dev/null
  awk -v n="$count" '{ printf "%.0f", ($1 + $2) * 1000 / n }' "$tmp/$1.time"
}
web=$(cpu web bench/web.json5)
center=$(cpu center "$tmp/center.json5")
subject=$(cpu subject "$tmp/subject.json5")
perf record -q -e cpu-clock -F 2000 -o "$tmp/perf.data" \
  "$PF" run --template "$tmp/subject.json5" --out "$tmp/out-perf" --workers 1 $files >/dev/null 2>&1
share=$(perf report -i "$tmp/perf.data" --no-children --sort symbol --stdio 2>/dev/null \
  | grep -E 'AttentionMap|SubjectFinder|CropPlacement|analysisImage|cbrtf' \
  | awk '{ gsub("%", "", $1); s += $1 } END { printf "%.2f", s }')
echo "photos: $count x 12 MP JPEG ($CORPUS/jpeg12), one worker, CPU (user+sys) per photo"
echo "| work | CPU ms / photo |"
echo "|---|---|"
echo "| web (resize 2048, q88) | $web |"
echo "| pack 1:1, 4:5, 9:16 at 1080, centred | $center |"
echo "| pack 1:1, 4:5, 9:16 at 1080, on the subject | $subject |"
awk -v s="$share" -v t="$subject" -v w="$web" 'BEGIN {
  ms = s / 100 * t
  printf "| subject analysis alone (perf: %.2f %% of the subject run) | %.1f = %.1f %% of the web photo |\n", s, ms, ms / w * 100 }'
