#!/usr/bin/env bash
# Deterministic benchmark corpus for bench/run.sh.
#
#   bench/make-corpus.sh [OUTDIR]          default /tmp/pf-bench/corpus
#
#   jpeg12/img01..img20.jpg   4032x3024 JPEG q90; odd numbers carry EXIF Orientation=6 (stored
#                             landscape, shown portrait), even numbers Orientation=1
#   jpeg12t/img01..img20.jpg  the same, each with the 160x120 EXIF thumbnail cameras and phones
#                             embed (harmonize looks at it instead of decoding the photo)
#   jpeg48/big1..big4.jpg     8064x6048 JPEG q90; big1 and big3 carry Orientation=6
#   jpeg48s/big1..big4.jpg    the same scenes with chroma subsampled 4:2:0, as phones and most
#                             cameras write (libvips writes q90 as 4:4:4 by default)
#   heic12/h1..h6.heic        4032x3024 HEIC, heif-enc -q 80 (x265), no rotation
#   thumb/t01..t40.jpg        2040x1356 JPEG q90 4:2:0 (2.8 MP, the size of DIV2K's photos, the
#                             corpus of imgproxy's public benchmark), no rotation
#   MD5SUMS                   checksums of the above
#
# Every image depends only on its seed and size (fixed-seed libvips perlin/worley/gaussnoise),
# so the same tool versions give byte-identical files. The pixels are coloured, textured noise
# with edges and grain, so decoders and encoders do real work (~3 MB per 12 MP JPEG).
#
# Generating takes minutes. A file already listed in OUTDIR/MD5SUMS with a matching checksum
# is kept; only missing or damaged files are made again. FORCE=1 remakes everything.
# JOBS=N images at once (default: number of cores).
# Needs vips (libvips-tools), exiftool, heif-enc (libheif-examples), bc:
#   scripts/bootstrap --bench
set -euo pipefail

# make W H SEED OUT Q [SAVE-OPTIONS]   (T = scratch directory of this worker)
make_image() {
  local W=$1 H=$2 S=$3 OUT=$4 Q=$5 OPTS=${6:+,$6}
  local f=$(( W >= 4032 ? W / 4032 : 1 )) w8=$(( (W + 7) / 8 )) h8=$(( (H + 7) / 8 ))   # 48 MP: same scene, finer
  v() { vips "$@"; }
  # colour field at 1/8 size: one Perlin field per band + a luminance field + a vertical gradient
  local b
  for b in 0 1 2; do v perlin "$T/c$b.v" $w8 $h8 --cell-size $(( 110 * f )) --seed $(( S * 100 + b )); done
  v bandjoin "$T/c0.v $T/c1.v $T/c2.v" "$T/c.v"
  v perlin "$T/l.v" $w8 $h8 --cell-size $(( 40 * f )) --seed $(( S * 100 + 3 ))
  v xyz "$T/xy.v" $w8 $h8
  v extract_band "$T/xy.v" "$T/y.v" 1
  local r=$(( 80 + S * 37 % 80 )) g=$(( 80 + S * 53 % 80 )) bl=$(( 80 + S * 71 % 80 ))
  v linear "$T/c.v" "$T/cs.v" "32 32 32" "$r $g $bl"
  v linear "$T/l.v" "$T/ls.v" 70 0
  # leading space: keeps "-0.01" from being read as an option
  v linear "$T/y.v" "$T/ys.v" " $(echo "scale=8; -60/$h8" | bc)" 30
  v sum "$T/cs.v $T/ls.v $T/ys.v" "$T/col8.v"
  v resize "$T/col8.v" "$T/colr.v" 8 --kernel cubic
  v crop "$T/colr.v" "$T/col.v" 0 0 "$W" "$H"
  # full-size detail: two Perlin octaves and Worley cells with hard edges ("pebbles")
  v perlin "$T/p1.v" "$W" "$H" --cell-size $(( 48 * f )) --seed $(( S * 100 + 10 ))
  v perlin "$T/p2.v" "$W" "$H" --cell-size $(( 9 * f )) --seed $(( S * 100 + 11 ))
  v worley "$T/wo.v" "$W" "$H" --cell-size $(( 220 * f )) --seed $(( S * 100 + 12 ))
  v linear "$T/p1.v" "$T/p1s.v" 0.18 0.8
  v linear "$T/p2.v" "$T/p2s.v" 0.14 0
  v relational_const "$T/wo.v" "$T/edge.v" moreeq $(( 70 * f ))
  v linear "$T/edge.v" "$T/edges.v" 0.0008 " -0.2"
  v sum "$T/p1s.v $T/p2s.v $T/edges.v" "$T/det.v"
  v multiply "$T/col.v" "$T/det.v" "$T/m.v"
  v gaussnoise "$T/n.v" "$W" "$H" --sigma 4 --mean 0 --seed $(( S * 100 + 20 ))   # sensor grain
  v add "$T/m.v" "$T/n.v" "$T/o.v"
  v cast "$T/o.v" "$OUT[Q=$Q,strip$OPTS]" uchar
}

one() { # one FILE OUTDIR: make one corpus file (runs in its own process under xargs)
  local rel=$1 d=$2 n
  T=$(mktemp -d "${TMPDIR:-/tmp}/pf-corpus.XXXXXX"); trap 'rm -rf "$T"' EXIT
  local tmp="$T/out.jpg" orient=1 base=${rel##*/}
  n=$(( 10#${base//[^0-9]/} ))
  case $rel in
    jpeg12/img*|jpeg12t/img*) make_image 4032 3024 "$n" "$tmp" 90; (( n % 2 )) && orient=6 ;;
    jpeg48/big*) make_image 8064 6048 $(( 100 + n )) "$tmp" 90; (( n % 2 )) && orient=6 ;;
    jpeg48s/big*) make_image 8064 6048 $(( 100 + n )) "$tmp" 90 subsample-mode=on; (( n % 2 )) && orient=6 ;;
    heic12/h*)   make_image 4032 3024 $(( 200 + n )) "$tmp" 95 ;;
    thumb/t*)    make_image 2040 1356 $(( 300 + n )) "$tmp" 90 subsample-mode=on ;;
  esac
  if [[ $rel == *.heic ]]; then
    heif-enc -q 80 -o "$T/out.heic" "$tmp" >/dev/null
    tmp="$T/out.heic"
  else   # fixed camera-like EXIF, so the files stay deterministic
    exiftool -q -overwrite_original -n -Orientation=$orient -Make=PFBench -Model=Synthetic \
      -DateTimeOriginal='2026:01:01 12:00:00' "$tmp"
    if [[ $rel == jpeg12t/* ]]; then   # the thumbnail in stored orientation, as a camera writes it
      vips thumbnail "$tmp" "$T/thumb.jpg[Q=80,strip]" 160 --no-rotate
      exiftool -q -overwrite_original "-ThumbnailImage<=$T/thumb.jpg" "$tmp"
    fi
  fi
  mv "$tmp" "$d/$rel"   # whole files only: an interrupted run leaves nothing half-written
  echo "  made $rel"
}

if [[ ${1:-} == --one ]]; then shift; one "$@"; exit; fi

SELF=$(readlink -f "$0")
OUT=$(mkdir -p "${1:-/tmp/pf-bench/corpus}" && cd "${1:-/tmp/pf-bench/corpus}" && pwd)
FILES=()
for i in $(seq -w 1 20); do FILES+=("jpeg12/img$i.jpg"); done
for i in $(seq -w 1 20); do FILES+=("jpeg12t/img$i.jpg"); done
for i in 1 2 3 4; do FILES+=("jpeg48/big$i.jpg"); done
for i in 1 2 3 4; do FILES+=("jpeg48s/big$i.jpg"); done
for i in 1 2 3 4 5 6; do FILES+=("heic12/h$i.heic"); done
for i in $(seq -w 1 40); do FILES+=("thumb/t$i.jpg"); done

mkdir -p "$OUT/jpeg12" "$OUT/jpeg12t" "$OUT/jpeg48" "$OUT/jpeg48s" "$OUT/heic12" "$OUT/thumb"
cd "$OUT"
todo=()
for f in "${FILES[@]}"; do
  if [[ -z ${FORCE:-} && -f MD5SUMS && -f $f ]] && grep -F "  $f" MD5SUMS | md5sum -c --status 2>/dev/null; then
    continue
  fi
  todo+=("$f")
done
if (( ${#todo[@]} == 0 )); then
  echo "corpus $OUT: all ${#FILES[@]} files present, checksums OK ($(md5sum < MD5SUMS | cut -c1-12))"
  exit 0
fi

for t in vips exiftool heif-enc bc; do
  command -v $t >/dev/null || { echo "missing $t: run scripts/bootstrap --bench" >&2; exit 1; }
done
echo "corpus $OUT: making ${#todo[@]} of ${#FILES[@]} files (JOBS=${JOBS:-$(nproc)}, takes minutes)"
printf '%s\n' "${todo[@]}" | xargs -P "${JOBS:-$(nproc)}" -I{} "$SELF" --one {} "$OUT"
md5sum "${FILES[@]}" > MD5SUMS
du -sh jpeg12 jpeg12t jpeg48 jpeg48s heic12 thumb
echo "corpus $OUT: done, MD5SUMS digest $(md5sum < MD5SUMS | cut -c1-12)"
