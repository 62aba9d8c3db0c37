#!/usr/bin/env bash
# A big drop into one hot folder (issue 17): N files (default 100,000) renamed into drop/ at
# once, finished by one daemon. Measures:
# - CPU per file: the daemon's utime + stime (/proc/PID/stat) from the drop until every file
#   is in a published report, divided by N (goal ≤ 1 ms);
# - the longest status staleness: the status file (`photofinish status`'s source) is read
#   every 100 ms while the drop is worked through; at each read from the first rename on,
#   now − max(its `updated`, the first rename) (an idle daemon writes nothing: what it wrote
#   before the drop was true until the drop began), the longest (goal ≤ 2 s);
# - inotify queue overflows, from the daemon's log (goal 0 at the default queue,
#   fs.inotify.max_queued_events, 16384 here: $(cat /proc/sys/fs/inotify/max_queued_events));
# - of that CPU, the core's own (its loop, claims, status: threads pf-watch, pf-work-*, pf-status);
#   the rest is finishing the photos (decode, resize, encode, reports);
# - the wall time, and that every file is finished exactly once.
#
#   bench/drop.sh [N]
#
# The files are small JPEGs (64×48, about 1 KB, made once with Pillow), each with its own bytes;
# the template makes one 32 px JPEG of each. Files are written to a staging folder first, then
# renamed into drop/ by one process as fast as it can (a copy tool's burst).
#
# Environment: PF (default bench/../.build/release/photofinish), WORKERS (default: the cores),
# PERF=file: `perf record -g` of the daemon over the drop into that file (PERFFREQ, default 499 Hz).
# SYSCALLS=file: the daemon's system calls over the drop counted there (`perf stat` of the
# syscalls tracepoints: fsync, fdatasync, openat, renameat, …).
# BENCHDIR: where the hot folder and the staging folder are made (default /tmp).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PF=${PF:-$HERE/../.build/release/photofinish}
N=${1:-100000}
[[ -x $PF ]] || { echo "photofinish not built ($PF): swift build -c release" >&2; exit 1; }
python3 -c 'import PIL' 2>/dev/null || { echo "needs Pillow: pip install pillow (or apt-get install python3-pil)" >&2; exit 1; }
HZ=$(getconf CLK_TCK)
TMP=$(mktemp -d "${BENCHDIR:-/tmp}/pf-drop.XXXXXX")
PID=; SAMPLER=
cleanup() { [[ -n $SAMPLER ]] && kill "$SAMPLER" 2>/dev/null; [[ -n $PID ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
cpu() { awk -v hz="$HZ" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"; }
# The CPU of the core's own threads: the loop (pf-watch), claims and take-ups (pf-work-*), the
# status publisher (pf-status); they live as long as the daemon. The rest is the finishing.
corecpu() {
  local t sum=0
  for t in /proc/"$1"/task/*; do
    case $(cat "$t/comm" 2>/dev/null) in pf-watch|pf-status|pf-work-*)
      sum=$(awk -v s="$sum" -v hz="$HZ" '{ sub(/.*\) /, ""); printf "%.2f", s + ($12 + $13) / hz }' "$t/stat") ;;
    esac
  done
  echo "$sum"
}

mkdir -p "$TMP/templates" "$TMP/run" "$TMP/staging"
cat > "$TMP/templates/tiny.json5" <<'EOF'
{ version: 1, resize: { longSide: 32 }, output: { format: "jpeg", quality: 80 } }
EOF
cat > "$TMP/photofinish.json5" <<EOF
{ templatesDir: "templates", inboxes: [ { name: "big", root: "$TMP/hot", template: "tiny" } ],
  staleAfter: "24h", workers: ${WORKERS:-0} }
EOF
python3 - "$TMP/staging" "$N" <<'EOF'
import io, random, sys
from PIL import Image
folder, n = sys.argv[1], int(sys.argv[2])
base = Image.effect_noise((64, 48), 40).convert("RGB")
buf = io.BytesIO(); base.save(buf, "JPEG", quality=80); data = bytearray(buf.getvalue())
# Each file its own bytes: a different comment segment after SOI.
for i in range(n):
    tag = b"photofinish bench %08d" % i
    seg = b"\xff\xfe" + (len(tag) + 2).to_bytes(2, "big") + tag
    with open(f"{folder}/IMG_{i:06d}.jpg", "wb") as f:
        f.write(data[:2] + seg + data[2:])
EOF
RUNTIME_DIRECTORY=$TMP/run "$PF" daemon --config "$TMP/photofinish.json5" > "$TMP/daemon.log" 2>&1 &
PID=$!
until grep -q 'ready: watching' "$TMP/daemon.log"; do kill -0 "$PID" || { cat "$TMP/daemon.log"; exit 1; }; sleep 0.1; done
sleep 2
status=$(ls "$TMP"/run/*.json | head -1)
# The sampler: the status file's age every 100 ms, written one a line.
python3 - "$status" "$TMP/ages" <<'EOF' &
import json, sys, time, datetime
path, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    while True:
        try:
            with open(path) as s: updated = json.load(s)["updated"]
            t = datetime.datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp()
            now = time.time()
            f.write(f"{now:.3f} {now - t:.3f}\n"); f.flush()
        except Exception:
            pass
        time.sleep(0.1)
EOF
SAMPLER=$!
PERFPID=
if [[ -n ${SYSCALLS:-} ]]; then
  events=$(for c in fsync fdatasync openat close renameat renameat2 mkdir write read unlinkat futex; do printf -- '-e syscalls:sys_enter_%s ' $c; done)
  # shellcheck disable=SC2086
  perf stat -x, $events -p "$PID" -o "$SYSCALLS" > /dev/null 2>&1 & PERFPID=$!; sleep 1
fi
if [[ -n ${PERF:-} ]]; then perf record -F "${PERFFREQ:-499}" -g -o "$PERF" -p "$PID" > "$TMP/perf.log" 2>&1 & PERFPID=$!; sleep 1; fi
before=$(cpu "$PID"); corebefore=$(corecpu "$PID"); start=$EPOCHREALTIME
python3 - "$TMP/staging" "$TMP/hot/drop" <<'EOF'
import os, sys
src, dst = sys.argv[1], sys.argv[2]
for name in os.listdir(src):
    os.rename(f"{src}/{name}", f"{dst}/{name}")
EOF
dropped=$(echo "$EPOCHREALTIME - $start" | bc)
# Done: drop/ and .work/ empty, and the reports name every file.
reported() { find "$TMP/hot/out" -name report.json -print0 2>/dev/null | xargs -0 -r cat | grep -o '"source" *: *"IMG_[0-9]*.jpg"' | wc -l; }
while true; do
  kill -0 "$PID" || { tail -50 "$TMP/daemon.log"; exit 1; }
  if [[ -z $(ls -A "$TMP/hot/drop") && -z $(ls -A "$TMP/hot/.work") ]]; then break; fi
  sleep 2
done
wall=$(echo "$EPOCHREALTIME - $start" | bc); after=$(cpu "$PID"); coreafter=$(corecpu "$PID")
kill "$SAMPLER"; wait "$SAMPLER" 2>/dev/null || true; SAMPLER=
if [[ -n $PERFPID ]]; then kill -INT "$PERFPID"; wait "$PERFPID" 2>/dev/null || true; fi
items=$(reported); unique=$(find "$TMP/hot/out" -name report.json -print0 | xargs -0 cat | grep -o '"source" *: *"IMG_[0-9]*.jpg"' | sort -u | wc -l)
batches=$(find "$TMP/hot/out" -name report.json | wc -l)
# Staleness: how long the status shown lagged behind the daemon, now − max(updated, the first
# rename): a status an idle daemon wrote before the drop was true until the drop began (it
# writes nothing while nothing changes), so its age before then is not counted. The old
# figure (now − updated) is printed beside it, and when the longest staleness was read.
stale=$(awk -v from="$start" '$1 >= from { u = $1 - $2; if (u < from) u = from; a = $1 - u; if (a > m) m = a } END { printf "%.3f", m }' "$TMP/ages")
staleat=$(awk -v from="$start" '$1 >= from { u = $1 - $2; if (u < from) u = from; a = $1 - u; if (a > m) { m = a; at = $1 - from } } END { printf "%.1f", at }' "$TMP/ages")
oldstale=$(awk -v from="$start" '$1 >= from { if ($2 > m) m = $2 } END { printf "%.2f", m }' "$TMP/ages")
kill -TERM "$PID"; wait "$PID" || true; PID=
# The daemon's last line about overflows (at its stop) says how many since the start.
overflows=$(grep -o 'overflowed.*; [0-9]* since the start' "$TMP/daemon.log" | grep -o '[0-9]* since the start' | tail -1 | cut -d' ' -f1 || true)
[[ -n $overflows ]] || overflows=$(grep 'inotify queue overflowed' "$TMP/daemon.log" | sed -E 's/.*overflowed( ([0-9]+) times)?.*/\2/' | awk '{ n += ($1 == "" ? 1 : $1) } END { print n + 0 }' || true)
echo "| files | batches | reported (unique) | renames took | wall to finished | CPU | CPU per file | of it the core's | longest status staleness | inotify overflows |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '| %d | %d | %d (%d) | %.1f s | %.1f s | %.1f s | %.2f ms | %.2f ms | %.2f s | %d |\n' "$N" "$batches" "$items" "$unique" "$dropped" "$wall" \
  "$(echo "$after - $before" | bc)" "$(echo "($after - $before) * 1000 / $N" | bc -l)" \
  "$(echo "($coreafter - $corebefore) * 1000 / $N" | bc -l)" "$stale" "$overflows"
echo
echo "The longest staleness was read ${staleat} s after the first rename; counted as now − updated (the status file's age, its idle age before the drop included), the longest was ${oldstale} s."
echo "$(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Wall times on a shared machine; CPU is the daemon's own."
