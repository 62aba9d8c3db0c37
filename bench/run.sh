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
# 4:2:0 full+marks", corpus jpeg48s/: the libvips-made corpus is 4:4:4 at q90).
# "photofinish harmonize ×2" is photofinish with bench/web-harmonize.json5 (web.json5 and
# harmonize: true), in the same rounds as "photofinish ×2" on the 12 MP and 48 MP JPEG and the
# HEIC sets, and on "12 MP JPEG, thumbnails" (corpus jpeg12t/: the same photos with the EXIF
# thumbnail cameras embed, which harmonize looks at instead of decoding): its cost is the ratio
# of the two (issue 38's goal: CPU at most +10 %).
# Prints a markdown table, the ratios and issues 12's and 22's goals met or not, and writes the same to
# RESULTS (default /tmp/pf-bench/results/<UTC time>.md), ready to paste into bench/RESULTS.md.
#
# Memory, two columns: "peak RSS" is GNU time's %M (the largest single process of the tree);
# "tree RSS" is the peak of all the run's processes added up (tools/treerss.py, sampled every
# 50 ms): for the tools that fork workers, what the workers hold together.
#
# Environment: PF (photofinish binary, default bench/../.build/release/photofinish; rows are
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
TMP=$(mktemp -d /tmp/pf-bench/run.XXXXXX); trap 'rm -rf "$TMP"' EXIT
RAW=$TMP/raw.tsv; : > "$RAW"

busy() { # CPU ticks (USER_HZ) spent by the whole machine so far: user nice system irq softirq steal
  awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# command_for SET TOOL FILE...: sets CMD (the command line) and OUTDIR
command_for() {
  local set=$1 tool=$2; shift 2
  OUTDIR=$TMP/out-${tool// /-}
  local tpl=$HERE/web.json5 vm=() im=()
  [[ $tool == "photofinish harmonize"* ]] && tpl=$HERE/web-harmonize.json5
  if [[ $set == *web+marks* ]]; then   # the template's logo is ../etc/…/studio.png from bench/
    tpl=$HERE/web-marks.json5; vm=(--marks --logo "$LOGO"); im=(--marks)
  elif [[ $set == *full+marks* ]]; then
    tpl=$HERE/full-marks.json5; vm=(--full --marks --logo "$LOGO"); im=(--full --marks)
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
  b0=$(busy); t0=$EPOCHREALTIME
  python3 "$HERE/tools/treerss.py" "$TMP/tree" -- \
    "$TIME" -f '%U %S %M' -o "$TMP/time" "${CMD[@]}" > "$TMP/log" 2>&1 || rc=$?
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

J12=("$C"/jpeg12/*.jpg); J12T=("$C"/jpeg12t/*.jpg); J48=("$C"/jpeg48/*.jpg); J48S=("$C"/jpeg48s/*.jpg); H12=("$C"/heic12/*.heic)
echo "bench: corpus $C, $RUNS runs + 1 warm-up, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg); START=$(date -u '+%Y-%m-%d %H:%M UTC')
ALL="photofinish ×2;pyvips ×2;ImageMagick ×2"
ALL4="photofinish ×2;pyvips ×2;Pillow ×2;ImageMagick ×2"
HARM="photofinish harmonize ×2"
bench "12 MP JPEG" "$ALL;$HARM" "${J12[@]}"
bench "12 MP JPEG, thumbnails" "photofinish ×2;$HARM" "${J12T[@]}"
bench "48 MP JPEG" "$ALL;$HARM" "${J48[@]}"
bench "12 MP HEIC" "$ALL;$HARM" "${H12[@]}"
bench "48 MP one file, Orientation 6 (big1)" "photofinish ×1;pyvips ×1" "$C/jpeg48/big1.jpg"
bench "48 MP one file, Orientation 1 (big2)" "photofinish ×1;pyvips ×1" "$C/jpeg48/big2.jpg"
bench "12 MP JPEG web+marks" "$ALL4" "${J12[@]}"
bench "48 MP JPEG web+marks" "$ALL" "${J48[@]}"
bench "12 MP JPEG full+marks" "$ALL4" "${J12[@]}"
bench "48 MP JPEG full+marks" "$ALL4" "${J48[@]}"
bench "48 MP JPEG 4:2:0 full+marks" "$ALL4" "${J48S[@]}"
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
python3 - "$RAW" "$TMP/dims.tsv" <<EOF | tee "$RESULTS"
import collections, statistics, sys
raw, dims = sys.argv[1:3]
rows = collections.OrderedDict()
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    if f[3] == "skip":
        rows[(f[0], f[1])] = None
    if f[3] in ("0", "skip"):   # warm-up, or photofinish not built
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
      "load average $LOAD0 before, $LOAD1 after.  ")
print("photofinish: $PFV; pyvips $VIPSV (pyvips-binary; HEIC: system libvips $SYSVIPSV); "
      "Pillow $PILV; ImageMagick $IMV.\n")
print("| set | tool | files | wall s (median) | photos/s | CPU s (median) | peak RSS MiB (max) | tree RSS MiB (max) | others, cores | outputs |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (s, t), r in rows.items():
    if r is None:
        print(f"| {s} | {t} | | skipped: not built | | | | | | |")
        continue
    w, c, m, tr = statistics.median(r["wall"]), statistics.median(r["cpu"]), max(r["rss"]), max(r["tree"])
    ok = all(x == 0 for x in r["rc"]) and min(r["outs"]) == r["n"]
    res[(s, t)] = (w, c, m, ok, tr)
    bad = "" if all(x == 0 for x in r["rc"]) else f" (exit {max(r['rc'])})"
    rate = f"{r['n'] / w:.2f}" if ok else "—"
    print(f"| {s} | {t} | {r['n']} | {w:.2f} | {rate} | {c:.2f} | {m:.0f} | {tr:.0f} | "
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
# Issues 12's and 22's goals: (set, other tool, measure index in res, name, at most)
goals = [("12 MP JPEG web+marks", "pyvips ×2", 0, "wall", 0.75),
         ("12 MP JPEG web+marks", "pyvips ×2", 1, "CPU (user + system)", 0.80),
         ("48 MP JPEG full+marks", "pyvips ×2", 4, "tree RSS (all processes)", 0.70),
         ("48 MP JPEG full+marks", "pyvips ×2", 0, "wall", 0.90),
         ("48 MP JPEG 4:2:0 full+marks", "pyvips ×2", 4, "tree RSS (all processes)", 0.70),
         ("48 MP JPEG 4:2:0 full+marks", "pyvips ×2", 0, "wall", 0.90),
         ("12 MP JPEG full+marks", "Pillow ×2", 0, "wall", 0.85)]
shown = [(g, res.get((g[0], "photofinish ×2")), res.get((g[0], g[1]))) for g in goals]
if any(pf and v for _, pf, v in shown):
    print("\n### Goals (issues 12 and 22): photofinish / other tool\n")
    print("| set | vs | measure | ratio | goal | met |")
    print("|---|---|---|---|---|---|")
    for (s, t, i, name, most), pf, v in shown:
        if not (pf and v):
            continue
        if not (pf[3] and v[3]):
            print(f"| {s} | {t} | {name} | n/a: a row failed | ≤ {most} | |")
            continue
        ratio = pf[i] / v[i]
        print(f"| {s} | {t} | {name} | {ratio:.2f} | ≤ {most} | {'yes' if ratio <= most else 'no'} |")
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
