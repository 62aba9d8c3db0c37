#!/bin/sh
# Builds the resampler benchmark with the release flags of the Pixels target and runs the
# sizes from the brief; compares the 12 MP result with ImageMagick's Lanczos (PSNR).
# Usage: bench/resample/run.sh   (from the repository root; needs ImageMagick's convert)
set -e  # (compare exits 1 when images differ: it is run last, with || true)
cd "$(dirname "$0")/../.."
tmp=${TMPDIR:-/tmp}/resample-bench
mkdir -p "$tmp"
srcs=$(ls Sources/Pixels/*.swift Sources/Pixels/Resample/*.swift | grep -v ColorTransform)
swiftc -O -wmo -enforce-exclusivity=unchecked -module-name ResampleBench $srcs bench/resample/main.swift -o "$tmp/bench"
# A photo-like picture: smooth areas, fine texture and hard edges.
[ -f "$tmp/12mp.ppm" ] || convert -seed 7 -size 4032x3024 plasma:green-blue -blur 0x1 \
    \( -size 4032x3024 xc:none -fill '#d04020' -draw 'circle 1500,1200 1500,300' \
       -fill '#f0f0e0' -draw 'rectangle 2600,400 3700,2600' \) -composite -depth 8 "$tmp/12mp.ppm"
[ -f "$tmp/48mp.ppm" ] || convert "$tmp/12mp.ppm" -filter Lanczos -resize 8064x6048! -depth 8 "$tmp/48mp.ppm"
"$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-2048.ppm" 2048 1536
"$tmp/bench" "$tmp/48mp.ppm" "$tmp/48-2048.ppm" 2048 1536 3
"$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-2016.ppm" 2016 1512
"$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-2048-rgba.ppm" 2048 1536 5 rgba
"$tmp/bench" "$tmp/12mp.ppm" "$tmp/12-4032.ppm" 4032 3024 3 rgb orient
convert "$tmp/12mp.ppm" -filter Lanczos -resize 2048x1536! -depth 8 "$tmp/im-2048.ppm"
convert "$tmp/12mp.ppm" -filter Lanczos -resize 2016x1512! -depth 8 "$tmp/im-2016.ppm"
printf 'PSNR vs ImageMagick Lanczos, 2048x1536: '; compare -metric PSNR "$tmp/12-2048.ppm" "$tmp/im-2048.ppm" null: 2>&1 || true; echo
printf 'PSNR vs ImageMagick Lanczos, 2016x1512: '; compare -metric PSNR "$tmp/12-2016.ppm" "$tmp/im-2016.ppm" null: 2>&1 || true; echo
