#!/usr/bin/env bash
# PhotoFinish against pyvips, Pillow and ImageMagick on the same work, side by side: "web"
# (bench/web.json5), "web+marks" (bench/web-marks.json5: the same plus text with shadow and logo)
# and "full+marks" (bench/full-marks.json5: those marks at full resolution, no resize).
#
#   bench/run.sh [CORPUS] [RUNS]       default /tmp/pf-bench/corpus, 3 counted runs (+1 warm-up)
#
# For each set (20 x 12 MP JPEG, 4 x 48 MP JPEG, 6 x 12 MP HEIC) it runs photofinish (--workers 2),
# tools/vips_web.py (--jobs 2) and tools/im_web.sh (2 processes), interleaved run by run so that
# drift in machine speed hits all three alike, then one 48 MP file alone (photofinish --workers 1,
# pyvips in one process), then the 12 MP and 48 MP JPEG sets again with marks ("… web+marks":
# photofinish with web-marks.json5, vips_web.py --marks, im_web.sh --marks; Pillow too for 12 MP),
# then the 12 MP and 48 MP JPEG sets at full resolution with marks ("… full+marks": full-marks.json5,
# --full --marks; the 48 MP set is two photos stored turned, big1 and big3, and two upright),
# and the 48 MP set once more as phones and most cameras write it, chroma 4:2:0 ("48 MP JPEG
# 4:2:0 full+marks", corpus jpeg48s/: the libvips-made corpus is 4:4:4 at q90), and last the work of
# imgproxy's public benchmark ("2.8 MP JPEG thumbnail": 40 x 2040x1356 JPEG → fit 512 x 512, q80,
# bench/thumb.json5 against vips_web.py --thumb 512), in images and source megapixels per second
# per core (per CPU second used: the machine is shared).
# "photofinish harmonize ×2" is photofinish with bench/web-harmonize.json5 (web.json5 and
# harmonize: true), in the same rounds as "photofinish ×2" on the 12 MP and 48 MP JPEG and the
# HEIC sets, and on "12 MP JPEG, thumbnails" (corpus jpeg12t/: the same photos with the EXIF
# thumbnail cameras embed, which harmonize looks at instead of decoding): its cost is the ratio
# of the two (issue 38's goal: CPU at most +10 %).
#
# The floor beside each JPEG row: libjpeg-turbo's own tjbench, one decode of the set's source
# (full size, its SIMD path; the first two files) plus one encode of the row's output (photofinish's
# first output, at its quality and chroma), as CPU ms a photo (tjbench times wall clock: each figure
# is scaled by the CPU share tjbench got, GNU time's user + system over elapsed), and each tool's
# CPU a photo as a multiple of it. Both with the accurate integer DCT, as photofinish encodes and
# decodes: tjbench's encode takes the fast one unless told (-accuratedct; its output was
# byte for byte cjpeg -dct fast's), its decode the accurate one already (djpeg -dct int's bytes).
# Prints a markdown table, the ratios and the goals met or not, and writes the same to
# RESULTS (default /tmp/pf-bench/results/<UTC time>.md), ready to paste into bench/RESULTS.md.
#
# Memory, two columns: "peak RSS" is GNU time's %M (the largest single process of the tree);
# "tree RSS" is the peak of all the run's processes added up (tools/treerss.py, sampled every
# 50 ms): for the tools that fork workers, what the workers hold together.
# Sampled in each tool's warm-up run only, so that the sampler's CPU and start-up do not count in
# the timed runs' wall (it took ~0.1 s from a 0.7 s run that keeps both cores busy).
#
# Environment: OUTS (a folder the outputs go under instead, e.g. /dev/shm; the report says where),
# PF (photofinish binary, default bench/../.build/release/photofinish; rows are
# skipped when it is missing), PF_BEFORE (a second photofinish binary, e.g. a build of main: its
# rows "photofinish before" run in the same rounds and get a ratio like the other tools), RESULTS,
# ONLY (regex on "set tool", e.g. ONLY='12 MP JPEG' for both 12 MP JPEG sets, ONLY='marks' for the
# web+marks rows only).
# Needs: scripts/bootstrap --bench, pip install pyvips pyvips-binary pillow. Makes the corpus if needed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
C=${1:-/tmp/pf-bench/corpus}; RUNS=${2:-3}
PF=${PF:-$HERE/../.build/release/photofinish}
RESULTS=${RESULTS:-/tmp/pf-bench/results/$(date -u +%Y%m%d-%H%M%S).md}
TIME=/usr/bin/time
LOGO=$(cd "$HERE/.." && pwd)/etc/photofinish/templates/logos/studio.png   # web-marks.json5's logo
[[ -x $TIME ]] || { echo "needs GNU time ($TIME): scripts/bootstrap --bench" >&2; exit 1; }
python3 -c 'import pyvips' 2>/dev/null || { echo "needs pyvips: pip install pyvips pyvips-binary" >&2; exit 1; }
python3 -c 'import PIL' 2>/dev/null || { echo "needs Pillow: pip install pillow (or apt-get install python3-pil)" >&2; exit 1; }

"$HERE/make-corpus.sh" "$C" >&2
C=$(cd "$C" && pwd)
HAVE_PF=1
if [[ ! -x $PF ]]; then
  HAVE_PF=0
  echo "photofinish not built ($PF): skipping its rows (build with: swift build -c release)" >&2
fi
[[ -z ${PF_BEFORE:-} || -x $PF_BEFORE ]] || { echo "PF_BEFORE=$PF_BEFORE is not an executable" >&2; exit 1; }
mkdir -p /tmp/pf-bench "$(dirname "$RESULTS")"
TMP=$(mktemp -d /tmp/pf-bench/run.XXXXXX)
# Where every tool writes its outputs: beside the run's files, or under OUTS (e.g. OUTS=/dev/shm:
# tmpfs, where photofinish's fsync of each output and of its report costs nothing; the other tools
# do not fsync) to see what the disk's flushes cost the wall.
OUTROOT=$TMP
[[ -n ${OUTS:-} ]] && OUTROOT=$(mktemp -d "$OUTS/pf-bench-out.XXXXXX")
trap 'rm -rf "$TMP" "$OUTROOT"' EXIT
RAW=$TMP/raw.tsv; : > "$RAW"

busy() { # CPU ticks (USER_HZ) spent by the whole machine so far: user nice system irq softirq steal
  awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# command_for SET TOOL FILE...: sets CMD (the command line) and OUTDIR
command_for() {
  local set=$1 tool=$2; shift 2
  OUTDIR=$OUTROOT/out-${tool// /-}
  local tpl=$HERE/web.json5 vm=() im=()
  [[ $tool == "photofinish harmonize"* ]] && tpl=$HERE/web-harmonize.json5
  if [[ $set == *web+marks* ]]; then   # the template's logo is ../etc/…/studio.png from bench/
    tpl=$HERE/web-marks.json5; vm=(--marks --logo "$LOGO"); im=(--marks)
  elif [[ $set == *full+marks* ]]; then
    tpl=$HERE/full-marks.json5; vm=(--full --marks --logo "$LOGO"); im=(--full --marks)
  elif [[ $set == *thumbnail* ]]; then
    tpl=$HERE/thumb.json5; vm=(--thumb 512)
  fi
  case $tool in
    "photofinish ×2"|"photofinish harmonize ×2") CMD=("$PF" run --template "$tpl" --out "$OUTDIR" --workers 2 "$@") ;;
    "photofinish ×1") CMD=("$PF" run --template "$tpl" --out "$OUTDIR" --workers 1 "$@") ;;
    "photofinish before ×2") CMD=("$PF_BEFORE" run --template "$tpl" --out "$OUTDIR" --workers 2 "$@") ;;
    "photofinish before ×1") CMD=("$PF_BEFORE" run --template "$tpl" --out "$OUTDIR" --workers 1 "$@") ;;
    "pyvips ×2")      CMD=(python3 "$HERE/tools/vips_web.py" "$OUTDIR" "$@" --jobs 2 "${vm[@]}") ;;
    "pyvips ×1")      CMD=(python3 "$HERE/tools/vips_web.py" "$OUTDIR" "$@" --jobs 1 "${vm[@]}") ;;
    "Pillow ×2")      CMD=(python3 "$HERE/tools/pillow_web.py" "$OUTDIR" "$@" --jobs 2 "${vm[@]}") ;;
    "ImageMagick ×2") CMD=(env LOGO="$LOGO" "$HERE/tools/im_web.sh" "${im[@]}" "$OUTDIR" "$@") ;;
  esac
  [[ $set == *HEIC* && $tool == pyvips* ]] && CMD+=(--system-libvips)
  return 0
}

# once SET TOOL RUN FILE...: one timed run, appended to RAW
once() {
  local set=$1 tool=$2 run=$3; shift 3
  command_for "$set" "$tool" "$@"
  rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
  local b0 b1 t0 t1 rc=0
  # The tree's RSS is sampled in the warm-up run only: the sampler (a Python process reading
  # all of /proc every 50 ms, ~0.13 s CPU a second) took a core's share from the tool it timed
  # and added its start-up to the wall — ~0.1 s on a 0.7 s photofinish run that keeps both
  # cores busy, less on a tool that leaves a core idle at times.
  local sample=(); (( run == 0 )) && sample=(python3 "$HERE/tools/treerss.py" "$TMP/tree" --)
  echo > "$TMP/tree"
  b0=$(busy); t0=$EPOCHREALTIME
  "${sample[@]}" "$TIME" -f '%U %S %M' -o "$TMP/time" "${CMD[@]}" > "$TMP/log" 2>&1 || rc=$?
  t1=$EPOCHREALTIME; b1=$(busy)
  local outs; outs=$(find "$OUTDIR" -maxdepth 2 -name '*.jpg' | wc -l)
  if (( rc != 0 )); then
    echo "  $set / $tool: exit $rc: $(tail -3 "$TMP/log" | tr '\n' ' ')" >&2
  fi
  local u s m; read -r u s m < <(tail -1 "$TMP/time")   # GNU time: user s, sys s, max RSS KiB
  printf '%s\t' "$set" "$tool" "$#" "$run" "$(echo "$t1 - $t0" | bc)" "$u" "$s" "$m" \
    "$(( b1 - b0 ))" "$outs" "$rc" "$(tail -1 "$TMP/tree")" >> "$RAW"
  getconf CLK_TCK >> "$RAW"
  # keep one output of each row for a look at sizes (the first file of the set)
  local first=${1##*/} f; first=${first%.*}.jpg
  f=$(find "$OUTDIR" -maxdepth 2 -name "$first" | head -1)
  [[ -n $f ]] && echo -e "$set\t$tool\t$first\t$(vipsheader -f width "$f")x$(vipsheader -f height "$f")" >> "$TMP/dims.tsv"
  return 0
}

# bench SET "TOOL;TOOL;…" FILE...: warm-up, then RUNS rounds, tools interleaved within a round
bench() {
  local set=$1 tools=() t r; IFS=';' read -r -a tools <<< "$2"; shift 2
  local keep=() with=()
  for t in "${tools[@]}"; do   # "photofinish ×N" brings "photofinish before ×N" along when PF_BEFORE is set
    with+=("$t")
    [[ $t == "photofinish ×"* && -n ${PF_BEFORE:-} ]] && with+=("photofinish before ${t#photofinish }")
  done
  for t in "${with[@]}"; do
    [[ "$set $t" =~ ${ONLY:-.} ]] || continue
    [[ $t == "photofinish "* && $HAVE_PF == 0 ]] && { printf '%s\t%s\t0\tskip\n' "$set" "$t" >> "$RAW"; continue; }
    keep+=("$t")
  done
  (( ${#keep[@]} )) || return 0
  for r in $(seq 0 "$RUNS"); do           # run 0 is the warm-up
    for t in "${keep[@]}"; do
      echo "  $set / $t: run $r of $RUNS$([[ $r == 0 ]] && echo ' (warm-up)')" >&2
      once "$set" "$t" "$r" "$@"
    done
  done
}

# tjbench_cpu_ms ARGS...: CPU ms of one operation of tjbench (its -quiet table gives the throughput in
# megapixels/s, wall clock), scaled by the CPU share tjbench got while it ran.
tjbench_cpu_ms() {
  local mp=$1; shift
  "$TIME" -f '%e %U %S' -o "$TMP/tjtime" tjbench "$@" -rgb -quiet -nowrite -benchtime 2 -warmup 0.3 \
    > "$TMP/tj" 2>&1 || { echo "  tjbench $*: failed: $(tail -2 "$TMP/tj" | tr '\n' ' ')" >&2; echo nan; return; }
  local perf   # the table's last line: compression's figure is the 7th field, decompression's the last
  perf=$(awk 'NF >= 9 { v = ($NF == "N/A" ? $7 : $NF) } END { print v }' "$TMP/tj")
  local e u s; read -r e u s < "$TMP/tjtime"
  echo "1000 * $mp / $perf * ($u + $s) / $e" | bc -l
}

# floor SET FILE...: the row's floor (see the top), appended to FLOOR: set, decode ms, encode ms
floor() {
  local set=$1; shift
  local pfout=$OUTROOT/out-photofinish-×2   # command_for's OUTDIR of "photofinish ×2"
  [[ $1 == *.jpg && -d $pfout ]] && command -v tjbench > /dev/null || return 0
  [[ "$set photofinish ×" =~ ${ONLY:-.} ]] || return 0
  local dir=${1%/*} dec f w h n=0 sum=0 out
  dec=$(awk -F'\t' -v d="$dir" '$1 == d { print $2 }' "$TMP/decode-floor" 2>/dev/null)
  if [[ -z $dec ]]; then
    for f in "${@:1:2}"; do
      w=$(vipsheader -f width "$f"); h=$(vipsheader -f height "$f")
      sum=$(echo "$sum + $(tjbench_cpu_ms "$(echo "$w * $h / 1000000" | bc -l)" "$f")" | bc -l); n=$((n + 1))
    done
    dec=$(echo "$sum / $n" | bc -l); printf '%s\t%s\n' "$dir" "$dec" >> "$TMP/decode-floor"
  fi
  # the output in the batch's folder (depth 2), not its report's thumbnail (thumbs/, depth 3)
  out=$(find "$pfout" -maxdepth 2 -name "$(basename "${1%.*}").jpg" | head -1)
  [[ -f $out ]] || out=$(find "$pfout" -maxdepth 2 -name '*.jpg' | sort | head -1)
  local q sub enc=nan
  if [[ -f $out ]]; then
    djpeg -outfile "$TMP/floor.ppm" "$out"
    q=$(identify -format '%Q' "$out"); sub=$(identify -format '%[jpeg:sampling-factor]' "$out")
    case $sub in 1x1,1x1,1x1) sub=444 ;; 2x1,1x1,1x1) sub=422 ;; *) sub=420 ;; esac
    w=$(vipsheader -f width "$out"); h=$(vipsheader -f height "$out")
    enc=$(tjbench_cpu_ms "$(echo "$w * $h / 1000000" | bc -l)" "$TMP/floor.ppm" "$q" -subsamp "$sub" -componly -accuratedct)
  fi
  printf '%s\t%s\t%s\n' "$set" "$dec" "$enc" >> "$FLOOR"
}

J12=("$C"/jpeg12/*.jpg); J12T=("$C"/jpeg12t/*.jpg); J48=("$C"/jpeg48/*.jpg); J48S=("$C"/jpeg48s/*.jpg); H12=("$C"/heic12/*.heic)
T3=("$C"/thumb/*.jpg); FLOOR=$TMP/floor.tsv; : > "$FLOOR"; : > "$TMP/decode-floor"
echo "bench: corpus $C, $RUNS runs + 1 warm-up, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg); START=$(date -u '+%Y-%m-%d %H:%M UTC')
ALL="photofinish ×2;pyvips ×2;ImageMagick ×2"
ALL4="photofinish ×2;pyvips ×2;Pillow ×2;ImageMagick ×2"
HARM="photofinish harmonize ×2"
bench "12 MP JPEG" "$ALL;$HARM" "${J12[@]}"; floor "12 MP JPEG" "${J12[@]}"
bench "12 MP JPEG, thumbnails" "photofinish ×2;$HARM" "${J12T[@]}"
bench "48 MP JPEG" "$ALL;$HARM" "${J48[@]}"; floor "48 MP JPEG" "${J48[@]}"
bench "12 MP HEIC" "$ALL;$HARM" "${H12[@]}"
bench "48 MP one file, Orientation 6 (big1)" "photofinish ×1;pyvips ×1" "$C/jpeg48/big1.jpg"
bench "48 MP one file, Orientation 1 (big2)" "photofinish ×1;pyvips ×1" "$C/jpeg48/big2.jpg"
bench "12 MP JPEG web+marks" "$ALL4" "${J12[@]}"; floor "12 MP JPEG web+marks" "${J12[@]}"
bench "48 MP JPEG web+marks" "$ALL" "${J48[@]}"; floor "48 MP JPEG web+marks" "${J48[@]}"
bench "12 MP JPEG full+marks" "$ALL4" "${J12[@]}"; floor "12 MP JPEG full+marks" "${J12[@]}"
bench "48 MP JPEG full+marks" "$ALL4" "${J48[@]}"; floor "48 MP JPEG full+marks" "${J48[@]}"
bench "48 MP JPEG 4:2:0 full+marks" "$ALL4" "${J48S[@]}"; floor "48 MP JPEG 4:2:0 full+marks" "${J48S[@]}"
bench "2.8 MP JPEG thumbnail" "photofinish ×2;pyvips ×2" "${T3[@]}"; floor "2.8 MP JPEG thumbnail" "${T3[@]}"
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
VIPSV=$(python3 -c 'import pyvips; print(".".join(str(pyvips.version(i)) for i in range(3)))')
SYSVIPSV=$(vips --version 2>/dev/null | sed 's/vips-//')
PILV=$(python3 -c 'import PIL; print(PIL.__version__)')
IMV=$(/usr/bin/convert -version | sed -n '1s/Version: ImageMagick \([^ ]*\) \(Q[0-9]*\).*/\1 \2/p')
PFV=n/a
if (( HAVE_PF )); then
  PFV="$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$HERE/.." diff --quiet HEAD 2>/dev/null || echo '+changes'), binary built $(date -u -r "$PF" '+%Y-%m-%d %H:%M UTC')"
  # the binary is not rebuilt here: say so when HEAD was committed after it was built
  HEADT=$(git -C "$HERE/.." log -1 --format=%ct HEAD 2>/dev/null || echo 0)
  (( HEADT > $(date -r "$PF" +%s) )) && PFV+=" (older than HEAD's commit: may not be HEAD's code)"
  [[ -n ${PF_BEFORE:-} ]] && PFV+="; photofinish before: $PF_BEFORE, built $(date -u -r "$PF_BEFORE" '+%Y-%m-%d %H:%M UTC')"
fi
touch "$TMP/dims.tsv"
python3 - "$RAW" "$TMP/dims.tsv" "$FLOOR" <<EOF | tee "$RESULTS"
import collections, math, statistics, sys
raw, dims, floors = sys.argv[1:4]
floor = {}   # set -> (decode ms, encode ms) a photo
for line in open(floors):
    f = line.rstrip("\n").split("\t")
    dec, enc = float(f[1]), float(f[2])
    if not (math.isnan(dec) or math.isnan(enc)):
        floor[f[0]] = (dec, enc)
rows = collections.OrderedDict()
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    if f[3] == "skip":
        rows[(f[0], f[1])] = None
    if f[3] == "0":   # warm-up: not counted, but the tree's RSS is sampled there only
        rows.setdefault((f[0], f[1]), dict(n=int(f[2]), wall=[], cpu=[], rss=[], tree=[], others=[], outs=[], rc=[]))["tree"].append(int(f[11] or 0) / 1024)
        continue
    if f[3] == "skip":   # photofinish not built
        continue
    s, t, n, run, wall, user, sys_, rss, busy, outs, rc, tree, hz = f
    r = rows.setdefault((s, t), dict(n=int(n), wall=[], cpu=[], rss=[], tree=[], others=[], outs=[], rc=[]))
    wall, cpu = float(wall), float(user) + float(sys_)
    r["wall"].append(wall); r["cpu"].append(cpu); r["rss"].append(int(rss) / 1024)
    r["tree"].append(int(tree or 0) / 1024)
    r["others"].append(max(0.0, int(busy) / int(hz) - cpu) / wall)
    r["outs"].append(int(outs)); r["rc"].append(int(rc))
res = {}
print("## Bench: web pipeline (bench/web.json5; \"web+marks\" rows: bench/web-marks.json5)\n")
print("$START, $(nproc) cores, $RUNS counted runs after 1 warm-up, tools interleaved per run; "
      "load average $LOAD0 before, $LOAD1 after; outputs on $(df --output=fstype "$OUTROOT" | tail -1) ($OUTROOT).  ")
print("photofinish: $PFV; pyvips $VIPSV (pyvips-binary; HEIC: system libvips $SYSVIPSV); "
      "Pillow $PILV; ImageMagick $IMV.\n")
print("| set | tool | files | wall s (median) | photos/s | CPU s (median) | CPU ms a photo | × floor | peak RSS MiB (max) | tree RSS MiB (max) | others, cores | outputs |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for (s, t), r in rows.items():
    if r is None:
        print(f"| {s} | {t} | | skipped: not built | | | | | | | | |")
        continue
    w, c, m, tr = statistics.median(r["wall"]), statistics.median(r["cpu"]), max(r["rss"]), max(r["tree"])
    ok = all(x == 0 for x in r["rc"]) and min(r["outs"]) == r["n"]
    res[(s, t)] = (w, c, m, ok, tr)
    bad = "" if all(x == 0 for x in r["rc"]) else f" (exit {max(r['rc'])})"
    rate = f"{r['n'] / w:.2f}" if ok else "—"
    per = 1000 * c / r["n"]
    times = f"{per / sum(floor[s]):.2f}" if s in floor else "n/a"
    print(f"| {s} | {t} | {r['n']} | {w:.2f} | {rate} | {c:.2f} | {per:.1f} | {times} | {m:.0f} | {tr:.0f} | "
          f"{statistics.mean(r['others']):.2f} | {min(r['outs'])} of {r['n']}{bad} |")
def ours(t): return t.startswith("photofinish ×")
def harmonize(t): return t.startswith("photofinish harmonize")
if not any(ours(t) for _, t in res):
    print("\nNo photofinish / tool ratios: no photofinish row ran.")
    sets = []
else:
    print("\n### photofinish / other tool (below 1 = photofinish better)\n")
    print("| set | vs | wall | CPU | peak RSS | tree RSS |")
    print("|---|---|---|---|---|---|")
    sets = list(dict.fromkeys(s for s, _ in rows))
for s in sets:
    pf = next((v for (ss, t), v in res.items() if ss == s and ours(t)), None)
    for (ss, t), v in res.items():
        if ss != s or ours(t) or harmonize(t):
            continue
        if pf is None:
            print(f"| {s} | {t} | n/a | n/a | n/a | n/a |")
        elif not (pf[3] and v[3]):
            print(f"| {s} | {t} | n/a: a row failed | | | |")
        else:
            print(f"| {s} | {t} | {pf[0] / v[0]:.2f} | {pf[1] / v[1]:.2f} | {pf[2] / v[2]:.2f} | "
                  f"{pf[4] / v[4]:.2f} |")
# Issue 38's goal: harmonize's cost, the web recipe with it over without it, in the same rounds
pairs = [(s, res.get((s, "photofinish ×2")), v) for (s, t), v in res.items() if harmonize(t)]
if any(pf and v for _, pf, v in pairs):
    print("\n### harmonize (issue 38): photofinish harmonize / photofinish, web recipe (goal: CPU ≤ 1.10)\n")
    print("| set | wall | CPU | peak RSS | met |")
    print("|---|---|---|---|---|")
    for s, pf, v in pairs:
        if not (pf and v):
            continue
        if not (pf[3] and v[3]):
            print(f"| {s} | n/a: a row failed | | | |")
            continue
        print(f"| {s} | {v[0] / pf[0]:.2f} | {v[1] / pf[1]:.2f} | {v[2] / pf[2]:.2f} | {'yes' if v[1] / pf[1] <= 1.10 else 'no'} |")
if floor:
    print("\n### The floor: tjbench, CPU ms a photo (decode of the source at full size + encode of the output)\n")
    print("| set | decode | encode | floor | photofinish CPU a photo | × floor |")
    print("|---|---|---|---|---|---|")
    for s, (dec, enc) in floor.items():
        pf = next((v for (ss, t), v in res.items() if ss == s and ours(t)), None)
        n = next((r["n"] for (ss, t), r in rows.items() if ss == s and r), 1)
        mine = f"{1000 * pf[1] / n:.1f} | {1000 * pf[1] / n / (dec + enc):.2f}" if pf else "n/a | n/a"
        print(f"| {s} | {dec:.1f} | {enc:.1f} | {dec + enc:.1f} | {mine} |")
thumbs = [(s, t, r) for (s, t), r in rows.items() if r and "thumbnail" in s]
mp = {}   # set -> mean source megapixels of a photo
for s, t, r in thumbs:
    mp[s] = float("$(vipsheader -f width "${T3[0]}" 2>/dev/null || echo 0)") * float("$(vipsheader -f height "${T3[0]}" 2>/dev/null || echo 0)") / 1e6
if thumbs:
    print("\n### Thumbnails (imgproxy's benchmark work), per core: per CPU second used\n")
    print("| set | tool | images/s a core | source MP/s a core | images/s (wall, both cores) |")
    print("|---|---|---|---|---|")
    for s, t, r in thumbs:
        c, w = statistics.median(r["cpu"]), statistics.median(r["wall"])
        print(f"| {s} | {t} | {r['n'] / c:.1f} | {r['n'] * mp[s] / c:.0f} | {r['n'] / w:.1f} |")
# The goals: (set, other tool, measure index in res, name, at most; "at least" goals are
# inverted ratios: other / photofinish)
goals = [("12 MP JPEG web+marks", "pyvips ×2", 0, "wall", 0.60),
         ("12 MP JPEG web+marks", "pyvips ×2", 1, "CPU (user + system)", 0.60),
         ("2.8 MP JPEG thumbnail", "pyvips ×2", 1, "CPU a photo (images/s a core ≥ 1.3× pyvips)", 1 / 1.3),
         ("48 MP JPEG full+marks", "pyvips ×2", 4, "tree RSS (all processes)", 0.70),
         ("48 MP JPEG full+marks", "pyvips ×2", 0, "wall", 0.90),
         ("48 MP JPEG 4:2:0 full+marks", "pyvips ×2", 4, "tree RSS (all processes)", 0.70),
         ("48 MP JPEG 4:2:0 full+marks", "pyvips ×2", 0, "wall", 0.90),
         ("12 MP JPEG full+marks", "Pillow ×2", 0, "wall", 0.85)]
shown = [(g, res.get((g[0], "photofinish ×2")), res.get((g[0], g[1]))) for g in goals]
if any(pf and v for _, pf, v in shown):
    print("\n### Goals: photofinish / other tool\n")
    print("| set | vs | measure | ratio | goal | met |")
    print("|---|---|---|---|---|---|")
    for (s, t, i, name, most), pf, v in shown:
        if not (pf and v):
            continue
        if not (pf[3] and v[3]):
            print(f"| {s} | {t} | {name} | n/a: a row failed | ≤ {most} | |")
            continue
        ratio = pf[i] / v[i]
        print(f"| {s} | {t} | {name} | {ratio:.2f} | ≤ {most:.2f} | {'yes' if ratio <= most else 'no'} |")
web = res.get(("12 MP JPEG", "photofinish ×2"))
if web and "12 MP JPEG" in floor:
    times = 1000 * web[1] / rows[("12 MP JPEG", "photofinish ×2")]["n"] / sum(floor["12 MP JPEG"])
    print(f"\nWeb row, photofinish CPU a photo / floor: {times:.2f} (goal ≤ 1.15: {'met' if times <= 1.15 else 'not met'})")
first = collections.OrderedDict()   # set -> {file: {tool: size}}
for l in open(dims):
    s, t, f, wh = l.rstrip("\n").split("\t")
    first.setdefault(s, {}).setdefault(f, {})[t.split(" ")[0]] = wh
if first:
    print("\nSize of the first output per row (img01, big1 carry Orientation 6: must be portrait):")
    for s, fs in first.items():
        for f, tw in fs.items():
            print(f"- {s}: {f} " + ", ".join(f"{t} {wh}" for t, wh in tw.items()))
EOF
echo "results: $RESULTS" >&2
