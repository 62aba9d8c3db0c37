#!/usr/bin/env bash
# Peak memory of stitching 12 × 12 MP photos into one long image, compared with the budget
# the design promises: the canvas plus two decoded photos (SPEC §3: "only the canvas and one
# photo are decoded at any time"). Measured, not asserted in tests.
#
#   bench/stitch/run.sh            uses .build/release/photofinish if built, else .build/debug
#   BIN=path CORPUS=dir bench/stitch/run.sh
#
# Two runs of `photofinish run --workers 1` on the same 12 photos (bench corpus jpeg12: 4032×3024,
# every other one stored sideways with EXIF orientation 6), whose per-photo outputs are kept
# tiny (64 px, decoded at 1/8) so the stitch dominates: one without `stitch`, one with it.
# The difference of their peak RSS (GNU time's %M) is what stitching costs.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-$([ -x .build/release/photofinish ] && echo .build/release/photofinish || echo .build/debug/photofinish)}
CORPUS=${CORPUS:-/tmp/pf-bench/corpus}
[ -x "$BIN" ] || swift build --product photofinish
[ -d "$CORPUS/jpeg12" ] || bench/make-corpus.sh "$CORPUS"
command -v /usr/bin/time >/dev/null || { echo "needs GNU time: scripts/bootstrap --bench" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/in"
for f in $(ls "$CORPUS"/jpeg12/*.jpg | sort | head -12); do ln -s "$(readlink -f "$f")" "$tmp/in/"; done
cat > "$tmp/base.json5" <<'T'
{ version: 1, resize: { longSide: 64 } }
T
cat > "$tmp/stitch.json5" <<'T'
{ version: 1, resize: { longSide: 64 }, stitch: { width: 1080, spacing: 24, maxHeight: 16000, split: false } }
T

peak() {  # peak RSS in KiB of one run
  /usr/bin/time -f '%M' -o "$tmp/rss" "$BIN" run --workers 1 --template "$tmp/$1.json5" --out "$tmp/out-$1" "$tmp/in" >/dev/null
  cat "$tmp/rss"
}
base=$(peak base)
start=$(date +%s.%N)
stitched=$(peak stitch)
secs=$(echo "$(date +%s.%N) - $start" | bc)
report=$(ls "$tmp"/out-stitch/*/report.json)
read -r w h < <(python3 -c "import json,sys; o=[o for o in json.load(open(sys.argv[1]))['outputs'] if '-story-' in o['file']][0]; print(*o['size'])" "$report")
canvas=$(( w * h * 3 / 1024 ))
photo=$(( 4032 * 3024 * 3 / 1024 ))
budget=$(( canvas + 2 * photo ))
delta=$(( stitched - base ))
echo "binary:                 $BIN"
echo "story:                  ${w}×${h} (12 photos, $(printf %.1f "$secs") s for the run with the stitch)"
echo "peak RSS without stitch: $(( base / 1024 )) MiB"
echo "peak RSS with stitch:    $(( stitched / 1024 )) MiB"
echo "stitch costs:            $(( delta / 1024 )) MiB"
echo "canvas:                  $(( canvas / 1024 )) MiB; one decoded 12 MP photo: $(( photo / 1024 )) MiB"
echo "budget (canvas + 2 photos): $(( budget / 1024 )) MiB → $([ "$delta" -le "$budget" ] && echo within || echo OVER)"
