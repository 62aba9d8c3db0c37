#!/bin/sh
# The cluster's cost per photo (issue 21): builds bench/cluster/main.swift with the Cluster
# sources (swiftc -O, linked with libpq), starts a PostgreSQL of its own in a temporary folder
# (initdb, pg_ctl; Unix socket only; fsync on, as a real server runs), and measures the task
# board's statements per photo: round trips, client CPU, server CPU, wall; then the same with
# claims of 40 photos and one host; then the wait a worker has for the database between photos
# of 130 ms, taking and completing in line and through TaskFeed. Prints markdown for
# bench/RESULTS.md.
# Usage: bench/cluster/run.sh [PHOTOS]   (as root the server runs as postgres; env: DAEMON_ONLY,
# ROUNDS, PF, CORPUS: see the daemon's part at the end)
set -e
cd "$(dirname "$0")/../.."
photos=${1:-200}
tmp=${TMPDIR:-/tmp}/pf-cluster-bench
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "PostgreSQL is not installed (scripts/bootstrap installs postgresql)"; exit 1; }
as=""
[ "$(id -u)" = 0 ] && as="setpriv --reuid=postgres --regid=postgres --init-groups --"
[ -d "$tmp/data" ] && $as "$bin/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null 2>&1 || true
rm -rf "$tmp"; mkdir -p "$tmp"
[ -n "$as" ] && chown postgres: "$tmp"
(cd /tmp && $as "$bin/initdb" -D "$tmp/data" -U photofinish --auth=trust -E UTF8 --no-locale --no-instructions >"$tmp/initdb.log")
(cd /tmp && $as "$bin/pg_ctl" -D "$tmp/data" -l "$tmp/log" -w -o "-k $tmp -c listen_addresses=''" start >/dev/null)
trap '(cd /tmp && $as "$bin/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null)' EXIT
"$bin/psql" -X -q -h "$tmp" -U photofinish -d postgres -c "CREATE DATABASE bench"
postmaster=$(head -1 "$tmp/data/postmaster.pid")
swiftc -O -wmo -module-name ClusterBench -I Sources/CPostgres -I /usr/include/postgresql \
    $(find Sources/Cluster -name '*.swift') bench/cluster/main.swift -lpq -o "$tmp/bench"
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}'), fsync on; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
conn="host=$tmp dbname=bench user=photofinish"
# DAEMON_ONLY=1: only the daemon with and without `cluster` (below).
if [ -z "${DAEMON_ONLY:-}" ]; then
    "$tmp/bench" "$conn" --photos "$photos" --hosts 3 --workers 2 --claim 1 --postmaster "$postmaster"
    echo
    "$bin/psql" -X -q -h "$tmp" -U photofinish -d bench -c "TRUNCATE photofinish.batches CASCADE" >/dev/null
    "$tmp/bench" "$conn" --photos "$photos" --hosts 1 --workers 2 --claim 40 --postmaster "$postmaster"
    # The wait a worker has for the database between photos of 130 ms: in line, then through TaskFeed.
    for mode in "" --feed; do
        echo
        "$bin/psql" -X -q -h "$tmp" -U photofinish -d bench -c "TRUNCATE photofinish.batches CASCADE" >/dev/null
        "$tmp/bench" "$conn" --photos "$photos" --batches 1 --hosts 3 --workers 2 --claim 1 --work-ms 130 $mode --postmaster "$postmaster"
    done

fi
# The daemon itself with and without `cluster` (issue 21's bench): 200 × 12 MP web photos
# (bench/web.json5) dropped at once into a hot folder of one daemon (workers 2), timed from the
# drop to the batch's report; the daemon's CPU (user+sys, /proc/<pid>/stat) over the same span,
# and with `cluster` the database server's (the postmaster and its children). Runs alternate
# without/with (ROUNDS each, default 2; the order swapped every other round) so that the
# machine's drift hits both alike. KEEP=<dir>: each run's daemon folder kept there as
# <round>-<with|without> (its log; `times`: the drop's and the report's instants, date +%s.%N).
# Needs a release build (PF, default .build/release/photofinish) and the 12 MP corpus
# (CORPUS, default /tmp/pf-bench/corpus/jpeg12: bench/make-corpus.sh).
pf=${PF:-.build/release/photofinish}
corpus=${CORPUS:-/tmp/pf-bench/corpus/jpeg12}
rounds=${ROUNDS:-2}
if [ -x "$pf" ] && [ -d "$corpus" ]; then
    hz=$(getconf CLK_TCK)
    set200="$tmp/corpus200"; mkdir -p "$set200"
    n=0
    while [ $n -lt "$photos" ]; do
        for f in "$corpus"/*.jpg; do
            [ $n -lt "$photos" ] || break
            cp "$f" "$set200/$(printf 'P%03d' $n)-$(basename "$f")"; n=$((n + 1))
        done
    done
    ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"; }
    server_ticks() {
        t=$(ticks "$postmaster")
        for c in $(cat /proc/"$postmaster"/task/*/children 2>/dev/null); do t=$((t + $(awk '{ print $14 + $15 }' /proc/"$c"/stat 2>/dev/null || echo 0))); done
        echo "$t"
    }
    daemon_run() { # daemon_run without|with: one line of figures
        d="$tmp/daemon-$1"; rm -rf "$d"; mkdir -p "$d/templates" "$d/run"
        for s in drop out originals failed .work incoming; do mkdir -p "$d/hot/$s"; done
        cp bench/web.json5 "$d/templates/web.json5"
        c=""; [ "$1" = with ] && c="cluster: { database: \"$conn\", host: \"bench-1\" },"
        echo "{ templatesDir: \"$d/templates\", inboxes: [ { name: \"bench\", root: \"$d/hot\", template: \"web\" } ],
                settle: \"300ms\", quiet: \"1s\", maxWait: \"60s\", maxBatch: 500, workers: 2, $c }" > "$d/config.json5"
        cp "$set200"/* "$d/hot/incoming/"
        RUNTIME_DIRECTORY="$d/run" "$pf" daemon --config "$d/config.json5" >"$d/log" 2>&1 &
        pid=$!
        w=0; until ls "$d"/run/*.json >/dev/null 2>&1 || [ $w -gt 300 ]; do sleep 0.2; w=$((w + 1)); done
        sleep 3  # its start-up (the template's proof) done before the count begins
        c0=$(ticks $pid); s0=$(server_ticks); t0=$(date +%s.%N)
        mv "$d/hot/incoming"/* "$d/hot/drop/"
        reported() { cat "$d"/hot/out/*/report.json 2>/dev/null | grep -o '"source"' | wc -l; }
        w=0; until [ "$(reported)" -ge "$photos" ] || [ $w -gt 6000 ]; do sleep 0.1; w=$((w + 1)); done
        t1=$(date +%s.%N); c1=$(ticks $pid); s1=$(server_ticks)
        echo "$t0 $t1" > "$d/times"
        kill -TERM $pid; wait $pid || true
        done=$(reported); batches=$(ls "$d"/hot/out | wc -l)
        [ "$batches" = 1 ] || echo "(note: the drop was claimed as $batches batches)"
        awk -v m="$1" -v n="$done" -v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v c=$((c1 - c0)) -v s=$((s1 - s0)) -v hz="$hz" 'BEGIN {
            printf "| %s cluster | %d | %.1f s | %.1f ms | %.1f s | %.1f ms | %s |\n", m, n, w, 1000 * w / n, c / hz, 1000 * c / hz / n,
                m == "with" ? sprintf("%.2f s", s / hz) : "–" }'
    }
    echo
    echo "The daemon, $photos × 12 MP web photos dropped at once (workers 2, quiet 1 s), $rounds rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| run | photos | wall (drop → report) | wall a photo | daemon CPU | CPU a photo | server CPU |"
    echo "|---|---|---|---|---|---|---|"
    r=0
    while [ $r -lt "$rounds" ]; do
        "$bin/psql" -X -q -h "$tmp" -U photofinish -d bench -c "TRUNCATE photofinish.batches CASCADE" >/dev/null 2>&1 || true
        # Paired by round, the order swapped every other round (without first, then with first).
        if [ $((r % 2)) = 0 ]; then order="without with"; else order="with without"; fi
        for m in $order; do
            daemon_run $m
            if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; rm -rf "$KEEP/$r-$m"; cp -a "$tmp/daemon-$m" "$KEEP/$r-$m"; fi
        done
        r=$((r + 1))
    done
fi
