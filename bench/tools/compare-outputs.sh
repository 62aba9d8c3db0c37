#!/usr/bin/env bash
# Do two photofinish binaries write the same files? Runs `photofinish run` of each on the same
# inputs, into two folders, and compares every file of the two batches byte for byte; the
# reports (report.json, report.html) and run's own output are compared with what differs by
# run left out: the batch id, the out folder, start and finish times, per-photo milliseconds,
# the host. Every ICC profile the outputs carry (lcms makes the sRGB one at each start) has
# its creation time in its header: those 12 bytes are left out too (in a PNG, inside the
# inflated iCCP chunk; and a PNG output's size in the reports, which the compressed profile's
# time can change by a byte or two: report.json's byte count of a PNG output, report.html's sizes
# in KiB and MiB — every file is compared itself, and report.json keeps the others' counts).
#
#   bench/tools/compare-outputs.sh BEFORE AFTER TEMPLATE INPUT...
#
#   BEFORE, AFTER   the two binaries (say main's .build/release/photofinish and a branch's)
#   TEMPLATE        passed to run --template
#   INPUT...        files and folders, as run takes them (the same for both)
#
# KEEP=1 keeps the work folder (printed). Exit 0 when everything is the same, 1 when a file
# differs (each is named), 2 on a usage error or a run that failed differently.
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,14p "$0" >&2; exit 2; }
BEFORE=$1 AFTER=$2 TEMPLATE=$3; shift 3
W=$(mktemp -d /tmp/pf-compare-XXXXXX)
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$W"' EXIT

run() {  # run BIN OUT LOG
  local rc=0
  "$1" run --template "$TEMPLATE" --out "$2" "${INPUTS[@]}" >"$3" 2>&1 || rc=$?
  echo "$rc"
}
INPUTS=("$@")
rc_a=$(run "$BEFORE" "$W/a" "$W/a.log")
rc_b=$(run "$AFTER" "$W/b" "$W/b.log")
[ "$rc_a" = "$rc_b" ] || { echo "exit status differs: before $rc_a, after $rc_b" >&2; exit 2; }

python3 - "$W/a" "$W/b" "$W/a.log" "$W/b.log" <<'PY'
import json, os, re, sys, zlib
a_root, b_root, a_log, b_log = sys.argv[1:5]

def batch(root):
    found = [d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))] if os.path.isdir(root) else []
    if len(found) != 1:
        sys.exit(f"{root}: {len(found)} batch folders, expected 1")
    return found[0], os.path.join(root, found[0])

a_id, a = batch(a_root)
b_id, b = batch(b_root)

def files(top, batch_id):
    """Each file's path in the batch folder, the batch id in a name (a story's) as BATCH."""
    out = {}
    for d, _, names in os.walk(top):
        for n in names:
            path = os.path.join(d, n)
            out[os.path.relpath(path, top).replace(batch_id, "BATCH")] = path
    return out

RUN_KEYS = {"batch", "started", "finished", "ms", "host", "elapsed", "seconds"}
def scrub(v, batch_id):
    if isinstance(v, dict):
        png = str(v.get("file", "")).lower().endswith(".png")  # its bytes: compared undated, as a file
        return {k: scrub(x, batch_id) for k, x in v.items() if k not in RUN_KEYS and not (png and k == "bytes")}
    if isinstance(v, list):
        return [scrub(x, batch_id) for x in v]
    if isinstance(v, str):
        return v.replace(batch_id, "BATCH")
    return v

TIME = re.compile(rb"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?Z?")
MS = re.compile(rb"\b\d+(\.\d+)? ?(ms|s)\b")
SIZE = re.compile(rb"\b\d+(\.\d+)? (KiB|MiB)\b")
def text(path, batch_id, root=None, sizes=False):
    data = open(path, "rb").read().replace(batch_id.encode(), b"BATCH")
    if root:
        data = data.replace(root.encode(), b"OUT")
    if sizes:
        data = SIZE.sub(b"N KiB", data)
    return MS.sub(b"N ms", TIME.sub(b"TIME", data))

CLASSES = (b"mntr", b"scnr", b"prtr", b"spac", b"abst", b"link", b"nmcl")
def undated(data):
    """`data` with the creation time of each ICC profile header in it zeroed."""
    out = bytearray(data)
    at = out.find(b"acsp")
    while at != -1:
        if at >= 36 and bytes(out[at - 24:at - 20]) in CLASSES:
            out[at - 12:at] = bytes(12)
        at = out.find(b"acsp", at + 4)
    return bytes(out)

def png_chunks(data):
    """A PNG as its chunks, the iCCP profile inflated and undated, CRCs left out."""
    chunks, i = [], 8
    while i + 8 <= len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        if kind == b"iCCP":
            name, _, rest = body.partition(b"\0")
            body = name + undated(zlib.decompress(rest[1:]))
        chunks.append((kind, body))
        i += 12 + n
    return chunks

def content(path):
    data = open(path, "rb").read()
    if data.startswith(b"\x89PNG"):
        return png_chunks(data)
    return undated(data)

fa, fb = files(a, a_id), files(b, b_id)
bad = 0
for f in sorted(fa.keys() ^ fb.keys()):
    print(f"only in {'before' if f in fa else 'after'}: {f}")
    bad += 1
same = 0
for f in sorted(fa.keys() & fb.keys()):
    pa, pb = fa[f], fb[f]
    if f == "report.json":
        ok = scrub(json.load(open(pa)), a_id) == scrub(json.load(open(pb)), b_id)
    elif f == "report.html":
        ok = text(pa, a_id, sizes=True) == text(pb, b_id, sizes=True)
    else:
        ok = content(pa) == content(pb)
    if ok:
        same += 1
    else:
        print(f"differs: {f}")
        bad += 1
logs_same = text(a_log, a_id, a_root) == text(b_log, b_id, b_root)
print(f"{same} of {len(fa.keys() | fb.keys())} files the same (reports without times and ids); run's output {'the same' if logs_same else 'DIFFERS'}")
sys.exit(1 if bad or not logs_same else 0)
PY
