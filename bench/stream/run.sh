#!/usr/bin/env bash
# Photos dropped in bursts (issue 21 part A: tasks start as photos settle): N × 12 MP JPEGs
# (default 400) renamed into drop/ in bursts of BURST (40) every EVERY seconds (4), with the
# hot folder's `quiet: 5s` (settle 2 s, maxWait 120 s, maxBatch 500: the defaults), the web
# template (bench/web.json5: long side 2048, JPEG q88). Measures, from the daemon's side:
# - first output: from the first burst's renames to the first finished output of a photo on
#   disk, wherever it is made (.work/<id>/early/ while the batch is open, .work/<id>/out/ while
#   it runs, out/ once published);
# - first report: from the first burst to the first report.json published;
# - report after the last arrival: from the last burst's renames to the report naming the last
#   photo (every photo reported);
# - the daemon's CPU (user+sys, /proc/PID/stat) from the first burst to the last report, and
#   the wall; that every photo is reported exactly once.
#
#   bench/stream/run.sh [N]            PF=path/to/photofinish (default .build/release/photofinish)
#
# Run it once with a build of main and once with this branch's (see bench/RESULTS.md). The
# photos are the corpus's jpeg12 set (bench/make-corpus.sh), copied under N names.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PF=${PF:-$HERE/../../.build/release/photofinish}
N=${1:-400}
BURST=${BURST:-40}
EVERY=${EVERY:-4}
CORPUS=${CORPUS:-/tmp/pf-bench/corpus}
[[ -x $PF ]] || { echo "photofinish not built ($PF): swift build -c release" >&2; exit 1; }
[[ -d $CORPUS/jpeg12 ]] || "$HERE/../make-corpus.sh" "$CORPUS"
HZ=$(getconf CLK_TCK)
TMP=$(mktemp -d /tmp/pf-stream.XXXXXX)
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
cpu() { awk -v hz="$HZ" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"; }

mkdir -p "$TMP/templates" "$TMP/run" "$TMP/hot/staging"
cp "$HERE/../web.json5" "$TMP/templates/web.json5"
cat > "$TMP/photofinish.json5" <<JSON
{ templatesDir: "templates", inboxes: [ { name: "shoot", root: "$TMP/hot", template: "web" } ],
  settle: "2s", quiet: "5s", maxWait: "120s", maxBatch: 500, staleAfter: "24h", workers: ${WORKERS:-0} }
JSON
src=("$CORPUS"/jpeg12/*.jpg)
for ((i = 0; i < N; i++)); do cp "${src[i % ${#src[@]}]}" "$TMP/hot/staging/$(printf 'IMG_%04d.jpg' "$i")"; done
RUNTIME_DIRECTORY=$TMP/run "$PF" daemon --config "$TMP/photofinish.json5" > "$TMP/daemon.log" 2>&1 &
PID=$!
until grep -q 'ready: watching' "$TMP/daemon.log"; do kill -0 "$PID" || { cat "$TMP/daemon.log"; exit 1; }; sleep 0.1; done
# The proof is rendered at start: let it finish so it does not count.
until grep -q 'proof of template web written' "$TMP/daemon.log"; do sleep 0.2; done
before=$(cpu "$PID")
python3 - "$TMP/hot" "$N" "$BURST" "$EVERY" > "$TMP/times" <<'PY'
import glob, json, os, sys, time, threading
hot, n, burst, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
names = sorted(os.listdir(hot + "/staging"))
first_drop = last_drop = None
def drops():
    global first_drop, last_drop
    start = time.time()
    for b in range(0, n, burst):
        at = start + (b // burst) * every
        while time.time() < at: time.sleep(0.01)
        t = time.time()
        for name in names[b:b + burst]: os.rename(f"{hot}/staging/{name}", f"{hot}/drop/{name}")
        first_drop = first_drop or t
        last_drop = t
threading.Thread(target=drops, daemon=True).start()
first_output = first_report = None
while True:
    now = time.time()
    if first_output is None and first_drop:
        if (glob.glob(hot + "/.work/*/early/*/*.jpg") or glob.glob(hot + "/.work/*/out/*.jpg")
                or glob.glob(hot + "/out/*/*.jpg")):
            first_output = now
    reports = glob.glob(hot + "/out/*/report.json")
    if reports and first_report is None: first_report = now
    if last_drop and len(reports) and not os.listdir(hot + "/staging"):
        sources = []
        for r in reports:
            try: sources += [i["source"] for i in json.load(open(r))["items"]]
            except Exception: pass
        if len(sources) >= n:
            print(f"{first_output - first_drop:.1f} {first_report - first_drop:.1f} {now - last_drop:.1f} "
                  f"{now - first_drop:.1f} {len(reports)} {len(sources)} {len(set(sources))}")
            break
    time.sleep(0.05)
PY
after=$(cpu "$PID")
kill -TERM "$PID"; wait "$PID" || true; PID=
read -r first report last wall batches items unique < "$TMP/times"
echo "| photos | bursts | first output | first report | report after the last arrival | wall | CPU | batches | reported (unique) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '| %d | %d × %d every %s s | %s s | %s s | %s s | %s s | %.1f s | %d | %d (%d) |\n' "$N" $(( (N + BURST - 1) / BURST )) "$BURST" "$EVERY" \
  "$first" "$report" "$last" "$wall" "$(echo "$after - $before" | bc)" "$batches" "$items" "$unique"
echo
# When the batch closed, what was finished while it was open, when it was published.
grep -E "${LOGLINES:-claimed batch|finished while the batch was open|batch (complete|partial|failed)}" "$TMP/daemon.log" | sed 's/^/    /'
echo "$(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). $PF"
