#!/usr/bin/env bash
# The bench "web" pipeline (bench/web.json5) in ImageMagick 6, one `convert` per file;
# with --marks, the "web+marks" pipeline (bench/web-marks.json5).
#
#   tools/im_web.sh [--full] [--marks] OUTDIR FILE...   writes OUTDIR/<stem>.jpg, PAR (default 2) files at a time
#
# --full: full resolution (bench/full-marks.json5): no jpeg:size hint, no -resize.
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
#
# --marks (s = short side of the resized photo; one `identify -ping` per file reads the size and
# EXIF orientation first, because IM 6 cannot size a mark from the image inside one command):
#   logo   LOGO (default: the repo's etc/photofinish/templates/logos/studio.png), -resize with
#          Lanczos to 16 % of s wide, alpha x 0.8, -composite top-left, 2.25 % of the width from
#          the left and 2.25 % of the height from the top (the template's per-axis padding)
#   shadow the text -annotate'd in black on a transparent canvas just around its ink, alpha
#          blurred (-blur 0x(0.004 s)), x 0.35, -composite 0.001 s right and down of the text
#   text   "© Example Studio 2026", DejaVu Sans Bold, -pointsize so the capitals are 3.5 % of s
#          (cap height 0.729 em), white at 85 %, -annotate with the baseline 3 % of s above the
#          bottom and the ink's right edge 3 % of s from the right (as PhotoFinish places it)
#   DejaVu Sans Bold's ink of that text, measured with IM (-annotate at 1024 pt, -format %@):
#   0.138 em right of the origin to 13.218 em, 0.761 em above the baseline to 0.208 em below.
set -euo pipefail
FONT=/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf
TEXT='© Example Studio 2026'
if [[ ${1:-} == --one ]]; then
  out=$2 in=$3 base=${3##*/}
  IMB=${IM:-/usr/bin/convert}
  heic=(); [[ ${in,,} == *.hei[cf] ]] && heic=(-colorspace sRGB)
  marks=()
  if [[ ${IM_WEB_MARKS:-0} == 1 ]]; then
    read -r w h o < <("$(dirname "$IMB")/identify" -ping -format '%w %h %[orientation]\n' "$in[0]")
    case $o in LeftTop|RightTop|RightBottom|LeftBottom) t=$w; w=$h; h=$t ;; esac   # EXIF 5..8
    # size after the resize, then every mark figure from it
    read -r lw lx ly pt tx ty sig cw ch cx cy sx sy < <(awk -v w="$w" -v h="$h" -v full="${IM_WEB_FULL:-0}" 'BEGIN {
      f = 2048 / (w > h ? w : h); if (f < 1 && full == 0) { w = int(w * f + 0.5); h = int(h * f + 0.5) }
      s = (w < h ? w : h); m = int(0.03 * s + 0.5); em = 0.035 * s / 0.729
      lw = int(0.16 * s + 0.5); lx = int(0.0225 * w + 0.5); ly = int(0.0225 * h + 0.5)
      tx = w - m - 13.218 * em; ty = h - m                  # text origin (baseline, left)
      sig = 0.004 * s; p = int(3 * sig) + 1; off = int(0.001 * s + 0.5)
      il = int(tx + 0.138 * em) - p; it = int(ty - 0.761 * em) - p   # shadow canvas: ink + p
      cw = int(tx + 13.218 * em) + 1 + p - il; ch = int(ty + 0.208 * em) + 1 + p - it
      printf "%d %d %d %.3f %.2f %.2f %.3f %d %d %.2f %.2f %d %d\n", lw, lx, ly, em, tx, ty, sig,
             cw, ch, tx - il, ty - it, il + off, it + off }')
    marks=(
      \( "${LOGO:?}" -filter Lanczos -resize "${lw}x" -channel A -evaluate multiply 0.8 +channel \)
      -geometry "+$lx+$ly" -composite
      \( -size "${cw}x$ch" xc:none -font "$FONT" -pointsize "$pt" -fill black -annotate "+$cx+$cy" "$TEXT"
         -channel A -blur "0x$sig" -evaluate multiply 0.35 +channel \)
      -geometry "+$sx+$sy" -composite
      -font "$FONT" -pointsize "$pt" -fill 'rgba(255,255,255,0.85)' -annotate "+$tx+$ty" "$TEXT"
    )
  fi
  size=(-define jpeg:size=2048x2048) resize=(-resize '2048x2048>')
  [[ ${IM_WEB_FULL:-0} == 1 ]] && size=() resize=()
  exec "$IMB" "${size[@]}" "$in" "${heic[@]}" -auto-orient \
    "${resize[@]}" "${marks[@]}" -strip -quality 88 -sampling-factor 2x2 \
    -define jpeg:optimize-coding=false "$out/${base%.*}.jpg"
fi
if [[ ${1:-} == --full ]]; then
  export IM_WEB_FULL=1; shift
fi
if [[ ${1:-} == --marks ]]; then
  export IM_WEB_MARKS=1; shift
  export LOGO=${LOGO:-$(cd "$(dirname "$0")/../.." && pwd)/etc/photofinish/templates/logos/studio.png}
fi
(( $# >= 2 )) || { echo "usage: $0 [--full] [--marks] OUTDIR FILE..." >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
export MAGICK_THREAD_LIMIT=${MAGICK_THREAD_LIMIT:-1}
printf '%s\0' "$@" | xargs -0 -n 1 -P "${PAR:-2}" "$(readlink -f "$0")" --one "$out"
