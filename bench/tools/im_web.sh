#!/usr/bin/env bash
# The bench "web" pipeline (bench/web.json5) in ImageMagick 6, one `convert` per file.
#
#   tools/im_web.sh OUTDIR FILE...       writes OUTDIR/<stem>.jpg, PAR (default 2) files at a time
#
# -define jpeg:size=2048x2048  JPEG DCT shrink-on-load, only while the image still covers 2048
# -auto-orient                 EXIF orientation applied
# -resize '2048x2048>'         long side 2048, never upscaled (IM's default filter when
#                              shrinking is Lanczos, support 3)
# -strip -quality 88 -sampling-factor 2x2 -define jpeg:optimize-coding=false
#                              JPEG q88 4:2:0, baseline Huffman (IM would optimise by default)
# -colorspace sRGB             HEIC only: IM 6.9.11 hands HEIC pixels over as YCbCr
# Each convert gets one OpenMP thread (MAGICK_THREAD_LIMIT=1), so PAR processes fill PAR cores.
# IM=path of convert (default /usr/bin/convert).
set -euo pipefail
if [[ ${1:-} == --one ]]; then
  out=$2 in=$3 base=${3##*/}
  heic=(); [[ ${in,,} == *.hei[cf] ]] && heic=(-colorspace sRGB)
  exec "${IM:-/usr/bin/convert}" -define jpeg:size=2048x2048 "$in" "${heic[@]}" -auto-orient \
    -resize '2048x2048>' -strip -quality 88 -sampling-factor 2x2 \
    -define jpeg:optimize-coding=false "$out/${base%.*}.jpg"
fi
(( $# >= 2 )) || { echo "usage: $0 OUTDIR FILE..." >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
export MAGICK_THREAD_LIMIT=${MAGICK_THREAD_LIMIT:-1}
printf '%s\0' "$@" | xargs -0 -n 1 -P "${PAR:-2}" "$(readlink -f "$0")" --one "$out"
