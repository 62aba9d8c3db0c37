#!/bin/sh
# The resampler alone (StreamingResizer and its C kernels), on the sizes of the web recipe:
# builds bench/resample/main.swift with the Pixels sources and CResample, then for each build of
# the kernels this CPU runs (PHOTOFINISH_SIMD=sse2, then the default: AVX2 where the CPU has it)
# prints the best CPU time of a few runs, the instructions one resize takes (callgrind: the same
# count whatever else the machine does) and whether the builds agree byte for byte; compares the
# 12 MP result with ImageMagick's Lanczos and the zone plate with a double-precision Lanczos
# (reference.py, PSNR).
# Usage: bench/resample/run.sh   (from anywhere; needs ImageMagick's convert, valgrind, numpy)
set -e  # (compare exits 1 when images differ: it is run last, with || true)
cd "$(dirname "$0")/../.."
tmp=${TMPDIR:-/tmp}/resample-bench
mkdir -p "$tmp/module"
srcs=$(find Sources/Pixels -name '*.swift' ! -name ColorTransform.swift)
printf 'module CResample {\n    header "%s/Sources/CResample/include/CResample.h"\n    export *\n}\n' "$PWD" \
    > "$tmp/module/module.modulemap"
clang -O3 -c Sources/CResample/resample.c -I Sources/CResample/include -o "$tmp/resample.o"
swiftc -O -wmo -enforce-exclusivity=unchecked -module-name ResampleBench -I "$tmp/module" \
    $srcs bench/resample/main.swift "$tmp/resample.o" -o "$tmp/bench"
# A photo-like picture: smooth areas, fine texture and hard edges.
[ -f "$tmp/12mp.ppm" ] || convert -seed 7 -size 4032x3024 plasma:green-blue -blur 0x1 \
    \( -size 4032x3024 xc:none -fill '#d04020' -draw 'circle 1500,1200 1500,300' \
       -fill '#f0f0e0' -draw 'rectangle 2600,400 3700,2600' \) -composite -depth 8 "$tmp/12mp.ppm"
[ -f "$tmp/48mp.ppm" ] || convert "$tmp/12mp.ppm" -filter Lanczos -resize 8064x6048! -depth 8 "$tmp/48mp.ppm"
"$tmp/bench" --zoneplate 4032 3024 "$tmp/zone.ppm"

builds=sse2
grep -qw avx2 /proc/cpuinfo && builds="sse2 avx2"
for k in $builds; do
    echo "== $k"
    export PHOTOFINISH_SIMD=$k
    "$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-2048-$k.ppm" 2048 1536
    "$tmp/bench" "$tmp/48mp.ppm" "$tmp/48-2048-$k.ppm" 2048 1536 3
    "$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-2016-$k.ppm" 2016 1512
    "$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-2048-rgba-$k.ppm" 2048 1536 5 rgba
    "$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-480-preview-$k.ppm" 480 360 5 preview
    "$tmp/bench" "$tmp/zone.ppm" "$tmp/zone-2048-$k.ppm" 2048 1536 3
    if command -v valgrind >/dev/null; then
        for size in "2048 1536" "480 360 1 preview"; do
            valgrind --tool=callgrind --callgrind-out-file=/dev/null "$tmp/bench" "$tmp/12mp.ppm" /dev/null $size 1 2>&1 \
                | sed -n "s/.*Collected : \([0-9]*\).*/instructions, 12 MP -> ${size%% 1*} (with reading the file): \1/p"
        done
    fi
done
unset PHOTOFINISH_SIMD
if [ "$builds" = "sse2 avx2" ]; then
    for f in 12-2048 48-2048 12-2016 12-2048-rgba 12-480-preview zone-2048; do
        cmp -s "$tmp/$f-sse2.ppm" "$tmp/$f-avx2.ppm" && echo "$f: sse2 and avx2 the same bytes" \
            || echo "$f: sse2 and avx2 DIFFER"
    done
fi
"$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-4032.ppm" 4032 3024 3 rgb orient
convert "$tmp/12mp.ppm" -filter Lanczos -resize 2048x1536! -depth 8 "$tmp/im-2048.ppm"
convert "$tmp/12mp.ppm" -filter Lanczos -resize 2016x1512! -depth 8 "$tmp/im-2016.ppm"
printf 'PSNR vs ImageMagick Lanczos, 2048x1536: '; compare -metric PSNR "$tmp/12-2048-sse2.ppm" "$tmp/im-2048.ppm" null: 2>&1 || true; echo
printf 'PSNR vs ImageMagick Lanczos, 2016x1512: '; compare -metric PSNR "$tmp/12-2016-sse2.ppm" "$tmp/im-2016.ppm" null: 2>&1 || true; echo
python3 -c 'import numpy' 2>/dev/null && python3 bench/resample/reference.py "$tmp" || echo "(no numpy: no double-precision reference)"
