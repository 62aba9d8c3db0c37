#!/usr/bin/env bash
# What an idle daemon costs (issues 11 and 17): start-up, CPU seconds per minute and wake-ups
# with 1, 100, 1,000 and 10,000 hot folders that all use one template.
#
#   bench/idle.sh [FOLDERS…]          default: 1 100 1000 10000
#
# For each count it writes a config with that many hot folders under a temporary folder, starts
# `photofinish daemon` and measures:
# - start-up: the wall time to the "ready:" line (every folder taken up or refused), and from
#   there until every hot folder has its proof (one render, the others linked or copied);
# - start-up again with the same folders (a restart: the folders and the proofs are there):
#   to ready, its CPU, and the CPU of the 5 s after (a second table, a row a restart: RESTARTRUNS,
#   default 3, with the load average at its end);
# - idle CPU: the daemon's own utime + stime (/proc/PID/stat, so other work on a loaded machine
#   does not count) over IDLE seconds (default 60) with nothing dropped, per minute;
# - idle wake-ups: context switches of all its threads (/proc/PID/task/*/status, voluntary and
#   not) over WAKE seconds (default 10): each time a thread woke up; in brackets those of
#   PhotoFinish's own threads (the main thread and those named pf-*): the others are
#   libdispatch's (its Linux workqueue monitor wakes its manager thread once a second in every
#   process that uses Dispatch). With strace installed and STRACE=1, also `strace -c -f` over
#   the same seconds: the system calls made.
# - `photofinish status` while it runs (a third table): the wall and CPU time of `status`, `status
#   --all` and `status --json` (the medians of STATUSRUNS runs, default 5) and the lines each
#   prints (`--all` only where the binary has it: a build from before it prints every folder
#   without it).
# Prints markdown tables, ready for bench/RESULTS.md.
#
# Environment: PF (default bench/../.build/release/photofinish), IDLE, WAKE (seconds), STRACE, STATUSRUNS, RESTARTRUNS,
# PROOFWAIT (seconds to wait for the proofs, default no limit: then "N of M" is printed).
# BENCHDIR: where the hot folders are made (default /tmp).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PF=${PF:-$HERE/../.build/release/photofinish}
IDLE=${IDLE:-60}
WAKE=${WAKE:-10}
COUNTS=("$@"); [[ ${#COUNTS[@]} -gt 0 ]] || COUNTS=(1 100 1000 10000)
[[ -x $PF ]] || { echo "photofinish not built ($PF): swift build -c release" >&2; exit 1; }
HZ=$(getconf CLK_TCK)
# Two descriptors a hot folder and the work in flight (see reference.md, The unit): raise the
# limit as the unit does (LimitNOFILE=524288), or the folders beyond it are refused.
ulimit -n 524288 2>/dev/null || ulimit -n "$(ulimit -Hn)"
TMP=$(mktemp -d "${BENCHDIR:-/tmp}/pf-idle.XXXXXX")
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

cpu() { # the process's CPU seconds so far (user + system)
  awk -v hz="$HZ" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
switches() { # context switches of the process's threads so far: all, then ours (named pf-*, and main)
  local all=0 own=0 t n
  for t in /proc/"$1"/task/*; do
    n=$(awk '/ctxt_switches/ { n += $2 } END { print n + 0 }' "$t/status" 2>/dev/null || echo 0)
    all=$((all + n))
    [[ $(cat "$t/comm" 2>/dev/null) == pf-* || ${t##*/} == "$1" ]] && own=$((own + n))
  done
  echo "$all $own"
}
proofs() { find "$1" -mindepth 3 -maxdepth 3 -path '*/proof/*.png' 2>/dev/null | wc -l; }
since() { echo "$EPOCHREALTIME - $1" | bc; }

alive() { kill -0 "$PID" 2>/dev/null || { echo "the daemon stopped; its log:" >&2; cat "$dir/daemon.log" >&2; exit 1; }; }
# Starts the daemon on $dir's config (its log made first, so the wait never reads a missing
# file) and waits for its ready line: sets PID, ready (wall seconds) and readycpu.
start_until_ready() {
  : > "$dir/daemon.log"
  local start=$EPOCHREALTIME
  RUNTIME_DIRECTORY=$dir/run "$PF" daemon --config "$dir/photofinish.json5" >> "$dir/daemon.log" 2>&1 &
  PID=$!
  until grep -q 'ready: watching' "$dir/daemon.log"; do alive; sleep 0.05; done
  ready=$(since "$start"); readycpu=$(cpu "$PID")
}

# The median wall and CPU time (user + system: what a loaded machine does not blur) of
# STATUSRUNS runs of `photofinish status ARGS…` (its output kept in $dir/status.out): prints
# "WALL CPU LINES".
status_time() {
  local walls=() cpus=() i t TIMEFORMAT='%R %U %S'
  for ((i = 0; i < ${STATUSRUNS:-5}; i++)); do
    t=$( { time RUNTIME_DIRECTORY=$dir/run "$PF" status "$@" > "$dir/status.out" 2>&1; } 2>&1 ) || true
    t=$(tail -1 <<< "$t")
    walls+=("${t%% *}"); cpus+=("$(awk '{ print $2 + $3 }' <<< "$t")")
  done
  median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
  printf '%s %s %d\n' "$(median "${walls[@]}")" "$(median "${cpus[@]}")" "$(wc -l < "$dir/status.out")"
}
HAS_ALL=$("$PF" help status 2>&1 | grep -c -- '--all' || true)

RESTARTS=()
STATUSES=()
echo "| hot folders | to ready | ready CPU | proofs done after ready | start-up CPU | proofs rendered | idle CPU per minute | wake-ups in ${WAKE} s (ours) | peak RSS |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for n in "${COUNTS[@]}"; do
  dir=$TMP/$n; mkdir -p "$dir/templates" "$dir/run" "$dir/hot"
  cat > "$dir/templates/shop.json5" <<'EOF'
{ version: 1, resize: { longSide: 1600 }, crops: ["1:1"], output: { format: "jpeg", quality: 85 } }
EOF
  { echo '{ templatesDir: "templates", inboxes: ['
    for ((i = 0; i < n; i++)); do echo "  { name: \"f$i\", root: \"$dir/hot/f$i\", template: \"shop\" },"; done
    echo '], staleAfter: "24h" }'; } > "$dir/photofinish.json5"
  "$PF" check --config "$dir/photofinish.json5" >/dev/null
  start_until_ready
  at=$EPOCHREALTIME
  made=0
  until [[ $made -ge $n ]]; do
    alive; sleep 0.2; made=$(proofs "$dir/hot")
    if [[ -n ${PROOFWAIT:-} ]] && (( $(echo "$EPOCHREALTIME - $at > $PROOFWAIT" | bc) )); then break; fi
  done
  proofwall=$(since "$at"); startup=$(cpu "$PID")
  [[ $made -ge $n ]] && proofnote="" || proofnote=" ($made of $n made)"
  rendered=$(grep -c 'rendering the proof' "$dir/daemon.log" || true)
  read -r st sc sl < <(status_time)
  if [[ $HAS_ALL -gt 0 ]]; then read -r at ac al < <(status_time --all); else at=$st; ac=$sc; al="$sl (no --all)"; fi
  read -r jt jc jl < <(status_time --json)
  STATUSES+=("$(printf '| %d | %.2f s (%.2f s) | %s | %.2f s (%.2f s) | %s | %.2f s (%.2f s) | %s |' \
    "$n" "$st" "$sc" "$sl" "$at" "$ac" "$al" "$jt" "$jc" "$jl")")
  sleep 5   # what follows the last proof (STATUS.txt writes) is not idle yet
  a=$(cpu "$PID"); sleep "$IDLE"; b=$(cpu "$PID")
  perminute=$(echo "scale=3; ($b - $a) * 60 / $IDLE" | bc)
  read -r s0 o0 < <(switches "$PID"); sleep "$WAKE"; read -r s1 o1 < <(switches "$PID")
  if [[ ${STRACE:-0} == 1 ]] && command -v strace >/dev/null; then
    timeout -s INT "$WAKE" strace -c -f -p "$PID" -o "$dir/strace.txt" 2>/dev/null || true
    echo "strace -c -f over ${WAKE} s, $n folders:" >&2; cat "$dir/strace.txt" >&2
  fi
  rss=$(awk '/VmHWM/ { printf "%.0f MB", $2 / 1024 }' "/proc/$PID/status")
  kill -TERM "$PID"; wait "$PID" || true; PID=
  printf '| %d | %.2f s | %.2f s | %.2f s%s | %.2f s | %d | %.3f s | %d (%d) | %s |\n' \
    "$n" "$ready" "$readycpu" "$proofwall" "$proofnote" "$startup" "$rendered" "$perminute" "$((s1 - s0))" "$((o1 - o0))" "$rss"
  # The same folders started again (a restart, an upgrade, a reboot: what most start-ups are):
  # every folder and proof is there already. RESTARTRUNS times (default 3), each a row.
  for ((r = 0; r < ${RESTARTRUNS:-3}; r++)); do
    start_until_ready
    sleep 5; after=$(cpu "$PID"); made=$(proofs "$dir/hot")
    rendered=$(grep -c 'rendering the proof' "$dir/daemon.log" || true)
    kill -TERM "$PID"; wait "$PID" || true; PID=
    RESTARTS+=("$(printf '| %d | %.2f s | %.2f s | %.2f s | %d of %d | %d | %s |' "$n" "$ready" "$readycpu" "$after" "$made" "$n" "$rendered" "$(cut -d' ' -f1 /proc/loadavg)")")
  done
  rm -rf "$dir"
done
echo
echo "Started again with the same folders (a restart):"
echo
echo "| hot folders | to ready | ready CPU | CPU 5 s after ready | proofs in place | proofs rendered | load |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${RESTARTS[@]}"
echo
echo "photofinish status while it runs (median of ${STATUSRUNS:-5} runs each: wall time, in brackets its CPU):"
echo
echo "| hot folders | status | lines | status --all | lines | status --json | lines |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${STATUSES[@]}"
echo
echo "CPU: the daemon's utime + stime (/proc/PID/stat, $HZ ticks a second); idle over ${IDLE} s after start-up; wake-ups: context switches of all its threads over ${WAKE} s; $(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Wall times on a shared machine."
