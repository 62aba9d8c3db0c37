#!/bin/sh
# The subject analysis' and the face detector's cost per 12 MP photo, next to the whole recipe
# (issue 9: the analysis at most 5 % of a 12 MP web photo's CPU time; issue 18: the detector
# at most 10 %), and libvips' attention smartcrop (pyvips) on the same pack. CPU time, so it
# holds on a loaded machine. bench/subject/faces.sh compares face detectors on real photos.
#
#   bench/subject/run.sh [CORPUS]     default /tmp/pf-bench/corpus (bench/make-corpus.sh makes it)
#
# Needs a release build (swift build -c release) and perf (linux-perf). N= photos (default 10).
# Prints, per 12 MP photo (user+sys CPU, one worker):
#   web        bench/web.json5: resize to 2048, JPEG q88 (the "12 MP web photo")
#   center     a crop pack (1:1, 4:5, 9:16 at 1080) with cropFocus "center"
#   subject    the same pack placed on the subject and its faces (the default)
#   vips       the same pack with pyvips' thumbnail(crop="attention"), one process, one thread
# and, from a perf profile of the subject run (cpu-clock samples), the share and the
# milliseconds per photo spent in the analysis (AttentionMap, SubjectFinder, CropPlacement, and
# libm's cbrtf, which only the attention map calls here) and in the face detector (dlib's
# code, CFaces' own, FaceDetector); and the issue's figure itself: one search of
# each 12 MP photo at the size photofinish searches (FaceDetector.searchShortSide, SHORT=720),
# this thread's CPU, the median of 20 searches, the median over the photos
# (bench/subject/detectors.cpp, built as faces.sh builds it; SEARCH=0 leaves it out).
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
perf report -i "$tmp/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null > "$tmp/perf.txt"
share=$(grep -E 'AttentionMap|SubjectFinder|CropPlacement|analysisImage|cbrtf' "$tmp/perf.txt" \
  | awk '{ gsub("%", "", $1); s += $1 } END { printf "%.2f", s }')
# The detector's making (dlib decodes its compressed model once per process) apart from its searches.
build=$(grep -E 'entropy_decoder|deserialize|base64|compress_stream|build_fhog_filterbank|dgesvd|liblapack|libblas' "$tmp/perf.txt" \
  | awk '{ gsub("%", "", $1); s += $1 } END { printf "%.2f", s }')
faces=$(grep -E 'dlib|pf_faces|FaceDetector|histograms_avx2|fhog_avx2|fhog_pyramid|filter_avx2|pyramid_down_avx2|blur_row|saliency' "$tmp/perf.txt" | grep -vE 'entropy_decoder|deserialize|base64|compress_stream|build_fhog_filterbank' \
  | awk '{ gsub("%", "", $1); s += $1 } END { printf "%.2f", s }')
vips=$(/usr/bin/time -f "%U %S" -o "$tmp/vips.time" python3 - "$tmp/out-vips" $files <<'PY' 2>/dev/null && awk -v n="$count" '{ printf "%.0f", ($1 + $2) * 1000 / n }' "$tmp/vips.time" || echo "n/a"
import os, sys
os.environ["VIPS_CONCURRENCY"] = "1"
import pyvips
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
for path in sys.argv[2:]:
    for w, h in ((1080, 1080), (864, 1080), (608, 1080)):
        pyvips.Image.thumbnail(path, w, height=h, crop="attention").write_to_file(
            f"{out}/{os.path.basename(path)}-{w}x{h}.jpg", Q=88, strip=True)
PY
)
search=n/a
if [ "${SEARCH:-1}" != 0 ]; then
  ${CXX:-clang++} -O2 -std=c++17 -I Sources/CFaces/include -I /usr/include/opencv4 -x c++ Sources/CFaces/model.c -x none \
    bench/subject/detectors.cpp Sources/CFaces/faces.cpp -o "$tmp/detectors" -lopencv_objdetect -lopencv_imgproc \
    -lopencv_imgcodecs -lopencv_core -l:libdlib.a -llapack -lblas -lpthread
  search=$("$tmp/detectors" photofinish "${SHORT:-720}" 20 $files | awk '!/^#/ { sub(" ms:.*", ""); print $NF }' \
    | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
fi
echo "photos: $count x 12 MP JPEG ($CORPUS/jpeg12), one worker, CPU (user+sys) per photo"
echo "| work | CPU ms / photo |"
echo "|---|---|"
echo "| web (resize 2048, q88) | $web |"
echo "| pack 1:1, 4:5, 9:16 at 1080, centred | $center |"
echo "| pack 1:1, 4:5, 9:16 at 1080, on the subject and its faces | $subject |"
echo "| the same pack, pyvips thumbnail(crop=\"attention\"), one thread | $vips |"
awk -v s="$share" -v f="$faces" -v t="$subject" -v w="$web" 'BEGIN {
  ms = s / 100 * t
  printf "| subject analysis alone (perf: %.2f %% of the subject run) | %.1f = %.1f %% of the web photo |\n", s, ms, ms / w * 100
  ms = f / 100 * t
  printf "| face detector searches (perf: %.2f %% of the subject run) | %.1f = %.1f %% of the web photo |\n", f, ms, ms / w * 100 }'
awk -v s="$search" -v w="$web" -v c="$center" -v k="${SHORT:-720}" 'BEGIN {
  if (s != "n/a") printf "| face detector, one search of a 12 MP photo at %d px (median of 20, this thread) | %.1f = %.1f %% of the web photo, %.1f %% of the web photo and the centred pack |\n", k, s, s / w * 100, s / (w + c) * 100 }'
awk -v b="$build" -v t="$subject" -v n="$count" 'BEGIN {
  printf "| face detector made, once per process (perf: %.2f %%) | %.0f ms in all |\n", b, b / 100 * t * n }'
