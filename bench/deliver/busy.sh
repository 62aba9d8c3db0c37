#!/usr/bin/env bash
# Does delivering slow finishing? (README "Delivering finished photos": each destination has a
# lane of its own.) A busy daemon — 48 photos dropped at once, finished in 4 batches of 12 — timed
# from the drop to the last batch's report, with a destination on (a folder, `file:///`: every
# byte copied, synced, read back and hashed on this machine, so the delivery's whole cost is
# ours) against none, side by side with farm-bench (A: on, B: off; the ratio pair by pair).
# Each run starts its own daemon on a fresh hot folder; the deliveries of the early batches run
# while the later ones are finished. Needs ImageMagick's convert (scripts/bootstrap --bench)
# and farm-bench.
#   bench/deliver/busy.sh [RUNS]     (PF_BIN: the photofinish binary, default .build/release/photofinish)
#   bench/deliver/busy.sh --one on|off WORK   (one run: what farm-bench times)
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
bin=$(readlink -f "${PF_BIN:-$here/../../.build/release/photofinish}")

if [[ ${1:-} == --one ]]; then
  mode=$2 work=$3
  run=$(mktemp -d "$work/run.XXXXXX")
  mkdir -p "$run"/hot/{drop,out,originals,failed,.work} "$run/staging" "$run/rt" "$run/outbox"
  deliver=""
  [[ $mode == on ]] && deliver="deliver: [ { name: \"outbox\", to: \"file://$run/outbox/\" } ],"
  cat > "$run/photofinish.json5" <<CONF
{ templatesDir: "$work/templates", inboxes: [ { name: "busy", root: "$run/hot", template: "web" } ],
  settle: "200ms", quiet: "500ms", maxBatch: 12, staleAfter: "24h", $deliver }
CONF
  RUNTIME_DIRECTORY=$run/rt "$bin" daemon --config "$run/photofinish.json5" >"$run/daemon.log" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$run"' EXIT
  for _ in $(seq 300); do [[ -e $run/rt/status.json || -e $run/hot/STATUS.txt ]] && break; sleep 0.1; done
  cp "$work"/photos/*.jpg "$run/staging/"
  mv "$run"/staging/*.jpg "$run/hot/drop/"
  # Until every photo is in a published report (the deliveries may still be under way).
  for _ in $(seq 6000); do
    done=$(cat "$run"/hot/out/*/report.json 2>/dev/null | grep -c '"status": "ok"' || true)
    [[ $done -ge 48 ]] && exit 0
    sleep 0.05
  done
  echo "not finished: $(tail -5 "$run/daemon.log")" >&2
  exit 1
fi

runs=${1:-5}
[[ -x $bin ]] || { echo "photofinish not built ($bin): swift build -c release" >&2; exit 1; }
work=$(mktemp -d /tmp/pf-bench-busy.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/photos" "$work/templates"
# One photo of noise, dropped under 48 names (duplicates are finished: the default).
convert -size 2000x1500 xc:gray +noise Random -quality 90 "$work/photos/P1.jpg"
for n in $(seq 2 48); do cp "$work/photos/P1.jpg" "$work/photos/P$n.jpg"; done
echo '{ version: 1, resize: { longSide: 1200 }, output: { format: "jpeg", quality: 85 } }' > "$work/templates/web.json5"
echo "48 photos of 2000x1500 ($(du -sh "$work/photos" | cut -f1)), 4 batches of 12; load: $(cut -d' ' -f1-3 /proc/loadavg)"
farm-bench -n "$runs" --timeout 1800 --vs "$0 --one off $work" -- "$0" --one on "$work"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
