#!/usr/bin/env bash
# Face detectors compared on real photos (scripts/test-photos --bench installs them): for each
# detector and search size, how many of the photos' faces it finds (recall), what it takes for
# a face that is none, and the CPU time of one search (median of REPEATS searches per photo,
# this thread's user+sys time: it holds on a shared machine; the medians' median over the
# photos). The faces each photo shows are listed below (x y w h in its pixels), checked by eye.
#
#   bench/subject/faces.sh [PHOTOS]      default .build/test-photos
#   KINDS="photofinish photofinish-sse2 dlib lbp lbp24" SIZES="320 480 560 640 720 800 960" REPEATS=20
#
# Built with clang++ (the compiler swift build uses for CFaces; CXX= to change). Needs libdlib-dev and OpenCV (libopencv-objdetect-dev, opencv-data): scripts/bootstrap --bench.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
photos=${1:-.build/test-photos}
KINDS=${KINDS:-photofinish photofinish-sse2 dlib lbp lbp24}
SIZES=${SIZES:-320 480 560 640 720 800 960}
REPEATS=${REPEATS:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CXX:-clang++} -O2 -std=c++17 -I Sources/CFaces/include -I /usr/include/opencv4 -x c++ Sources/CFaces/model.c -x none \
  bench/subject/detectors.cpp Sources/CFaces/faces.cpp -o "$tmp/detectors" -lopencv_objdetect -lopencv_imgproc -lopencv_imgcodecs -lopencv_core -l:libdlib.a -llapack -lblas -lpthread
cat > "$tmp/truth" <<'TRUTH'
group-table.jpg 1280 886 64,285,101,101 263,174,101,101 462,307,101,101 739,374,101,101 894,86,101,101 1127,296,101,101
obama.jpg 910 1137 381,151,231,231
obama2.jpg 626 1200 183,315,238,238
obama3.jpg 1434 2333 668,318,244,244
biden.jpg 970 2204 461,270,246,246
astronaut.png 512 512 181,85,87,87
messi5.jpg 548 342 233,102,26,26
chelsea.png 451 300
coffee.png 720 480
rocket.jpg 640 427
butterfly.jpg 665 480
squirrel_cls.jpg 603 480
TRUTH
files=()
while read -r name _; do [[ -f "$photos/$name" ]] && files+=("$photos/$name"); done < "$tmp/truth"
[[ ${#files[@]} -gt 0 ]] || { echo "no photos in $photos: scripts/test-photos --bench" >&2; exit 2; }
echo "| detector | short side | faces found | not faces | CPU ms / search (median) | slowest photo |"
echo "|---|---|---|---|---|---|"
for kind in $KINDS; do
  for size in $SIZES; do
    "$tmp/detectors" "$kind" "$size" "$REPEATS" "${files[@]}" > "$tmp/out" 2>/dev/null
    python3 - "$tmp/truth" "$tmp/out" "$kind" "$size" <<'PY'
import sys, statistics, os
truth = {}
for line in open(sys.argv[1]):
    parts = line.split()
    w, h = float(parts[1]), float(parts[2])
    truth[parts[0]] = [tuple(float(v) for v in b.split(",")) for b in parts[3:]], w, h
found = missed = wrong = 0; times = []; slow = ("", 0)
for line in open(sys.argv[2]):
    if line.startswith("#") or ":" not in line: continue
    head, boxes = line.split(":", 1)
    path, size, ms, _ = head.split()
    name = os.path.basename(path); ms = float(ms); times.append(ms)
    if ms > slow[1]: slow = (name, ms)
    faces, w, h = truth[name]
    left = list(faces)
    for b in boxes.split():
        x, y, bw, bh = (float(v) for v in b.split(","))
        cx, cy = (x + bw / 2) * w, (y + bh / 2) * h
        hit = next((f for f in left if f[0] - f[2] / 2 <= cx <= f[0] + 1.5 * f[2] and f[1] - f[3] / 2 <= cy <= f[1] + 1.5 * f[3]
                    and 0.5 * f[2] <= bw * w <= 3 * f[2]), None)
        if hit: left.remove(hit); found += 1
        else: wrong += 1
    missed += len(left)
total = found + missed
print(f"| {sys.argv[3]} | {sys.argv[4]} | {found} of {total} | {wrong} | {statistics.median(times):.1f} | {slow[0]} {slow[1]:.1f} |")
PY
  done
done
