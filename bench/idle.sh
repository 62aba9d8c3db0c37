#!/usr/bin/env bash
# What an idle daemon costs (issue 11): CPU seconds per minute with 1, 100 and 1,000 hot folders
# that all use one template, and the cost of starting with 1,000 such folders (one proof
# rendered, copied to the other 999).
#
#   bench/idle.sh [FOLDERS…]          default: 1 100 1000
#
# For each count it writes a config with that many hot folders under a temporary folder, starts
# `photofinish daemon`, waits until every hot folder has its STATUS.txt and its proof (the
# start-up), then counts the daemon's own CPU time (utime + stime from /proc/PID/stat, so other
# work on a loaded machine does not count) over IDLE seconds (default 60) with nothing dropped.
# Prints a markdown table, ready for bench/RESULTS.md.
#
# Environment: PF (default bench/../.build/release/photofinish), IDLE (seconds measured).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PF=${PF:-$HERE/../.build/release/photofinish}
IDLE=${IDLE:-60}
COUNTS=("$@"); [[ ${#COUNTS[@]} -gt 0 ]] || COUNTS=(1 100 1000)
[[ -x $PF ]] || { echo "photofinish not built ($PF): swift build -c release" >&2; exit 1; }
HZ=$(getconf CLK_TCK)
TMP=$(mktemp -d /tmp/pf-idle.XXXXXX)
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

cpu() { # the process's CPU seconds so far (user + system)
  awk -v hz="$HZ" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
count() { find "$1" -mindepth 2 -maxdepth 3 -path "$2" 2>/dev/null | wc -l; }

echo "| hot folders | start-up: wall | start-up: CPU | proofs rendered | idle CPU per minute | peak RSS |"
echo "|---:|---:|---:|---:|---:|---:|"
for n in "${COUNTS[@]}"; do
  dir=$TMP/$n; mkdir -p "$dir/templates" "$dir/run" "$dir/hot"
  cat > "$dir/templates/shop.json5" <<'EOF'
{ version: 1, resize: { longSide: 1600 }, crops: ["1:1"], output: { format: "jpeg", quality: 85 } }
EOF
  { echo '{ templatesDir: "templates", inboxes: ['
    for ((i = 0; i < n; i++)); do echo "  { name: \"f$i\", root: \"$dir/hot/f$i\", template: \"shop\" },"; done
    echo '], staleAfter: "24h" }'; } > "$dir/photofinish.json5"
  "$PF" check --config "$dir/photofinish.json5" >/dev/null
  start=$EPOCHREALTIME
  RUNTIME_DIRECTORY=$dir/run "$PF" daemon --config "$dir/photofinish.json5" > "$dir/daemon.log" 2>&1 &
  PID=$!
  # Start-up: every hot folder has its STATUS.txt and its proof.
  until [[ $(count "$dir/hot" '*/STATUS.txt') -ge $n && $(count "$dir/hot" '*/proof/*.png') -ge $n ]]; do
    kill -0 "$PID" 2>/dev/null || { echo "the daemon stopped; its log: $dir/daemon.log" >&2; cat "$dir/daemon.log" >&2; exit 1; }
    sleep 1
  done
  wall=$(echo "$EPOCHREALTIME - $start" | bc)
  startup=$(cpu "$PID")
  rendered=$(grep -c 'rendering the proof' "$dir/daemon.log" || true)
  sleep 5   # the last STATUS.txt writes after the proofs
  a=$(cpu "$PID"); sleep "$IDLE"; b=$(cpu "$PID")
  perminute=$(echo "scale=3; ($b - $a) * 60 / $IDLE" | bc)
  rss=$(awk '/VmHWM/ { printf "%.0f MB", $2 / 1024 }' "/proc/$PID/status")
  kill -TERM "$PID"; wait "$PID" || true; PID=
  printf '| %d | %.1f s | %.2f s | %d | %.3f s | %s |\n' "$n" "$wall" "$startup" "$rendered" "$perminute" "$rss"
  rm -rf "$dir"
done
echo
echo "CPU: the daemon's utime + stime (/proc/PID/stat, $HZ ticks a second); idle over ${IDLE} s after start-up; $(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
