#!/usr/bin/env bash
# The web console's costs (issue 20), with the release binary:
#   1. upload throughput: 100 × 12 MP JPEGs uploaded one request each over loopback, three at a
#      time (as the console's script sends them: multipart, streamed into .work/, fsynced, renamed into
#      drop/), against `curl -T` of the same files to a file (file://, no fsync) — goal ≥ 0.9×;
#      twice in each round: as the console runs with no batch being finished (its threads at
#      nice 0), and with its threads reniced to 10 (what they run at while a batch is finished
#      or queued); and one at a time (nice 0); all interleaved in the same rounds, as the
#      machine's load drifts;
#   2. the daemon's idle CPU with the console on (its socket passed) and off, over IDLE seconds;
#   3. its memory under attack: a chunked upload of 200,000 parts the hot folder never takes
#      (`x.tmp`, 19 MB), sent FLOODS times; the daemon's RSS (VmRSS) before, after the first and
#      after the last (flat: what one request may keep is bounded whatever it sends).
# CPU figures are the daemon's own (utime + stime from /proc/PID/stat): other work on a shared
# machine does not count there; wall times do suffer from it (say so with the figures).
#
#   bench/console/run.sh            PF=… (default .build/release/photofinish), RUNS=3, IDLE=60, FLOODS=5
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PF=${PF:-$HERE/../../.build/release/photofinish}
RUNS=${RUNS:-3}
IDLE=${IDLE:-60}
FLOODS=${FLOODS:-5}
[[ -x $PF ]] || { echo "photofinish not built ($PF): swift build -c release" >&2; exit 1; }
command -v systemd-socket-activate >/dev/null || { echo "systemd-socket-activate is missing (apt-get install systemd)" >&2; exit 1; }
HZ=$(getconf CLK_TCK)
TMP=$(mktemp -d /tmp/pf-console.XXXXXX)
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
cpu() { awk -v hz="$HZ" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"; }
# The console's own CPU: its MHD-worker threads (the proof thread may be rendering meanwhile).
wcpu() { local t s=0; for t in $(ps -L -o tid=,comm= -p "$1" | awk '$2 == "MHD-worker" { print $1 }'); do
  s=$(echo "$s + $(cpu "$1/task/$t")" | bc -l); done; echo "$s"; }
now() { date +%s.%N; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# 100 photos of 12 MP (4000 × 3000): one rendered, the others the same bytes under other names.
mkdir -p "$TMP/photos" "$TMP/templates" "$TMP/copies"
if command -v convert >/dev/null; then
  convert -size 4000x3000 plasma:fractal -seed 7 -quality 92 "$TMP/photos/IMG_0001.jpg"
else
  head -c 4500000 /dev/urandom > "$TMP/photos/IMG_0001.jpg"
fi
for i in $(seq 2 100); do cp "$TMP/photos/IMG_0001.jpg" "$TMP/photos/$(printf 'IMG_%04d.jpg' "$i")"; done
bytes=$(du -cb "$TMP/photos"/*.jpg | tail -1 | cut -f1)
echo '{ version: 1, resize: { longSide: 2048 } }' > "$TMP/templates/shop.json5"
# Nothing is finished while uploading (settle and quiet of an hour): the upload is measured alone.
cat > "$TMP/photofinish.json5" <<CONF
{ templatesDir: "templates", users: "users.json5", settle: "1h", quiet: "1h", maxWait: "2h", maxFileBytes: "64MiB",
  inboxes: [ { name: "shop", root: "$TMP/shop", template: "shop" } ] }
CONF
printf 'bench-password\n' | "$PF" user add bench --admin --config "$TMP/photofinish.json5" --password-stdin >/dev/null

start() { # $1: with or without the console
  local p; p=$(port)
  if [[ $1 == console ]]; then
    RUNTIME_DIRECTORY="$TMP/run" systemd-socket-activate --fdname=web -l "127.0.0.1:$p" "$PF" daemon --config "$TMP/photofinish.json5" >"$TMP/daemon.log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.1; done
  else
    RUNTIME_DIRECTORY="$TMP/run" "$PF" daemon --config "$TMP/photofinish.json5" >"$TMP/daemon.log" 2>&1 &
    PID=$!
  fi
  for _ in $(seq 600); do grep -q "ready: watching" "$TMP/daemon.log" 2>/dev/null && break; sleep 0.1; done
  # The proof is rendered once at start: wait for it, it is no part of what is measured.
  for _ in $(seq 1200); do ls "$TMP/shop/proof/"*.png >/dev/null 2>&1 && break; sleep 0.1; done
  PORT=$p
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

start console
url="http://127.0.0.1:$PORT"
csrf=$(curl -s -c "$TMP/jar" -b "$TMP/jar" "$url/login" | sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p')
curl -s -o /dev/null -c "$TMP/jar" -b "$TMP/jar" --data-urlencode "csrf=$csrf" -d user=bench --data-urlencode password=bench-password "$url/login"
csrf=$(curl -s -b "$TMP/jar" "$url/inbox/shop/" | sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p' | head -1)
[[ -n $csrf ]] || { echo "cannot log in: $(tail -5 "$TMP/daemon.log")" >&2; exit 1; }
workers() { ps -L -o tid=,comm= -p "$PID" | awk '$2 == "MHD-worker" { print $1 }'; }
renice_workers() { for t in $(workers); do renice -n "$1" -p "$t" >/dev/null; done; }
upload() { # $1: the figures' file suffix, $2: requests at a time
  rm -f "$TMP/shop/drop/"*
  sync
  local c0 c1 t0 t1 n
  c0=$(wcpu "$PID"); t0=$(now)
  printf '%s\n' "$TMP/photos/"*.jpg | xargs -P "$2" -I{} \
    curl -s -o /dev/null -b "$TMP/jar" -H 'Accept: application/json' -F "csrf=$csrf" -F "photos=@{}" "$url/inbox/shop/upload"
  t1=$(now); c1=$(wcpu "$PID")
  n=$(ls "$TMP/shop/drop" | wc -l); [[ $n -eq 100 ]] || { echo "only $n photos landed in drop/" >&2; exit 1; }
  echo "$t1 - $t0" | bc -l >> "$TMP/console$1.s"
  echo "$c1 - $c0" | bc -l >> "$TMP/cpu$1.s"
}
: > "$TMP/console.s"; : > "$TMP/curl.s"; : > "$TMP/cpu.s"; : > "$TMP/console10.s"; : > "$TMP/cpu10.s"
: > "$TMP/console1.s"; : > "$TMP/cpu1.s"
for run in $(seq "$RUNS"); do
  upload "" 3
  renice_workers 10
  upload 10 3
  renice_workers 0
  upload 1 1
  rm -f "$TMP/copies/"*
  sync
  t0=$(now)
  for f in "$TMP/photos/"*.jpg; do curl -s -T "$f" "file://$TMP/copies/$(basename "$f")"; done
  t1=$(now)
  echo "$t1 - $t0" | bc -l >> "$TMP/curl.s"
done
# The flood: 200,000 refused parts in one chunked request (curl sends a file chunked when told
# Transfer-Encoding: chunked), FLOODS times; the daemon's RSS before and after.
python3 - "$TMP/flood.body" "$csrf" <<'PY'
import sys
with open(sys.argv[1], 'wb') as f:
    f.write(b'--flood\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n' + sys.argv[2].encode() + b'\r\n')
    part = b'--flood\r\nContent-Disposition: form-data; name="photos"; filename="x.tmp"\r\n\r\nx\r\n'
    f.write(part * 200000)
    f.write(b'--flood--\r\n')
PY
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$PID/status"; }
rm -f "$TMP/shop/drop/"*
rss_before=$(rss)
for i in $(seq "$FLOODS"); do
  curl -s -o /dev/null -b "$TMP/jar" -H 'Transfer-Encoding: chunked' -H 'Accept: application/json' \
    -H 'Content-Type: multipart/form-data; boundary=flood' --data-binary @"$TMP/flood.body" "$url/inbox/shop/upload" || true
  [[ $i -eq 1 ]] && rss_first=$(rss)
done
rss_last=$(rss)
stop
console=$(median < "$TMP/console.s"); plain=$(median < "$TMP/curl.s"); upcpu=$(median < "$TMP/cpu.s")
console10=$(median < "$TMP/console10.s"); upcpu10=$(median < "$TMP/cpu10.s")
console1=$(median < "$TMP/console1.s")
mb=$(echo "$bytes / 1000000" | bc -l)

idle() { # $1: console or plain -> CPU seconds per minute
  rm -f "$TMP/shop/drop/"*
  start "$1"
  sleep 5
  local c0 c1; c0=$(cpu "$PID"); sleep "$IDLE"; c1=$(cpu "$PID")
  stop
  echo "($c1 - $c0) * 60 / $IDLE" | bc -l
}
idle_on=$(idle console); idle_off=$(idle plain)

printf '| what | figure |\n|---|---:|\n'
printf '| photos uploaded | 100 × %.1f MB (12 MP JPEG), one request each, %d runs (median) |\n' "$(echo "$mb / 100" | bc -l)" "$RUNS"
printf '| console upload, three at a time, no batch finishing (nice 0) | %.2f s · %.0f MB/s |\n' "$console" "$(echo "$mb / $console" | bc -l)"
printf '| console upload, three at a time, threads at nice 10 (a batch finishing) | %.2f s · %.0f MB/s |\n' "$console10" "$(echo "$mb / $console10" | bc -l)"
printf '| console upload, one at a time (nice 0) | %.2f s · %.0f MB/s |\n' "$console1" "$(echo "$mb / $console1" | bc -l)"
printf '| curl -T to a file (file://) | %.2f s · %.0f MB/s |\n' "$plain" "$(echo "$mb / $plain" | bc -l)"
printf '| console ÷ curl -T (throughput), nice 0 | %.2f× (goal ≥ 0.9×) |\n' "$(echo "$plain / $console" | bc -l)"
printf '| console ÷ curl -T (throughput), nice 10 | %.2f× |\n' "$(echo "$plain / $console10" | bc -l)"
printf '| console ÷ curl -T (throughput), one at a time | %.2f× |\n' "$(echo "$plain / $console1" | bc -l)"
printf '| CPU of the console threads, 100 uploads, nice 0 · nice 10 | %.2f s · %.2f s (%.1f · %.1f ms per MB) |\n' "$upcpu" "$upcpu10" \
  "$(echo "$upcpu * 1000 / $mb" | bc -l)" "$(echo "$upcpu10 * 1000 / $mb" | bc -l)"
printf '| idle daemon CPU per minute, console on | %.3f s |\n' "$idle_on"
printf '| idle daemon CPU per minute, console off | %.3f s |\n' "$idle_off"
printf '| daemon RSS: before the floods · after 1 · after %d (200,000 refused parts each, chunked) | %d · %d · %d KiB (+%d KiB from the first to the last) |\n' \
  "$FLOODS" "$rss_before" "$rss_first" "$rss_last" "$((rss_last - rss_first))"
