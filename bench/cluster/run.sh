#!/bin/sh
# The cluster's cost per photo (issue 21): builds bench/cluster/main.swift with the Cluster
# sources (swiftc -O, linked with libpq), starts a PostgreSQL of its own in a temporary folder
# (initdb, pg_ctl; Unix socket only; fsync on, as a real server runs), and measures the task
# board's statements per photo: round trips, client CPU, server CPU, wall; then the same with
# claims of 40 photos and one host; then the wait a worker has for the database between photos
# of 130 ms, taking and completing in line and through TaskFeed. Prints markdown for
# bench/RESULTS.md.
# Usage: bench/cluster/run.sh [PHOTOS]   (as root the server runs as postgres)
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
