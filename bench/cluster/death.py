#!/usr/bin/env python3
# What a host's death costs a cluster: three daemons as three hosts of one hot folder (plain
# processes of this machine, each its own cluster.host, config and runtime folder; the defaults
# lease 30s and claimerTakeover 10s), a PostgreSQL of its own (fsync on, Unix socket), N photos
# dropped in two halves — the second once the claimer's batch holds the first and the claimer and a
# host that did not claim it each hold tasks of it. At that moment one host is killed (kill -9), or none:
#   none      no kill: the baseline
#   claimer   the host holding the folder's claimer role (its batch open: adopted by another)
#   other     a host that holds tasks and did not claim (its tasks wait for their lease)
# Timed: from that moment (the kill) to every photo in a published report. The cost of a death is
# each run's time less the baseline's of the same binary and round, their median. Binaries A and B (before and after) alternate
# case by case, round by round, so the machine's drift hits both alike. Prints markdown.
#
# Usage: PF_A=/path/before/photofinish PF_B=/path/after/photofinish bench/cluster/death.py [ROUNDS] [PHOTOS]
# (as root the server runs as postgres; photos made with Pillow: 1600x1200 JPEG, q85)
import glob, io, json, os, random, shutil, signal, statistics, subprocess, sys, time

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
photos = int(sys.argv[2]) if len(sys.argv) > 2 else 300
binaries = {"A": os.environ.get("PF_A", ""), "B": os.environ.get("PF_B", ".build/debug/photofinish")}
for name, path in binaries.items():
    if not os.access(path, os.X_OK):
        sys.exit(f"binary {name} not found: set PF_A and PF_B to two photofinish builds (before, after)")
binaries = {k: os.path.abspath(v) for k, v in binaries.items()}
root = os.path.dirname(os.path.abspath(__file__))
template = os.path.join(root, "..", "web.json5")
tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pf-death-bench")
bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in p.split("/")[4].split(".")])
if not bins:
    sys.exit("PostgreSQL is not installed (scripts/bootstrap installs postgresql)")
pgbin = bins[-1]
as_pg = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] if os.getuid() == 0 else []


def run(args, **kw):
    return subprocess.run(args, check=True, cwd="/tmp", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw).stdout


def psql(sql, db="postgres"):
    return run([pgbin + "/psql", "-X", "-q", "-A", "-t", "-h", tmp, "-U", "photofinish", "-d", db, "-c", sql]).strip()


# The server.
if os.path.isdir(tmp + "/data"):
    subprocess.run(as_pg + [pgbin + "/pg_ctl", "-D", tmp + "/data", "-m", "fast", "-w", "stop"], cwd="/tmp", capture_output=True)
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp, exist_ok=True)
if as_pg:
    shutil.chown(tmp, "postgres", "postgres")
run(as_pg + [pgbin + "/initdb", "-D", tmp + "/data", "-U", "photofinish", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-instructions"])
run(as_pg + [pgbin + "/pg_ctl", "-D", tmp + "/data", "-l", tmp + "/log", "-w", "-o", f"-k {tmp} -c listen_addresses='' -c max_connections=100", "start"])

import atexit
atexit.register(lambda: subprocess.run(as_pg + [pgbin + "/pg_ctl", "-D", tmp + "/data", "-m", "fast", "-w", "stop"],
                                       cwd="/tmp", capture_output=True))

# The photos: textured noise, different seeds.
from PIL import Image
staging = tmp + "/set"
os.makedirs(staging)
for n in range(photos):
    rnd = random.Random(n)
    small = Image.frombytes("RGB", (40, 30), bytes(rnd.randrange(256) for _ in range(40 * 30 * 3)))
    small.resize((1600, 1200), Image.BICUBIC).save(f"{staging}/P{n:03d}.jpg", quality=85)


def status(run_dir):
    for path in glob.glob(run_dir + "/*.json"):
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            pass
    return None


def reported(hot):
    n = 0
    for path in glob.glob(hot + "/out/*/report.json"):
        try:
            with open(path) as f:
                n += len(json.load(f).get("items", []))
        except (OSError, ValueError):
            pass
    return n


def until(condition, limit, every=0.05):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(every)
    return condition()


def one(binary, case, label):
    """One run: returns the seconds from the moment (the kill) to every photo published."""
    d = f"{tmp}/run-{label}"
    shutil.rmtree(d, ignore_errors=True)
    hot = d + "/hot"
    for sub in ["drop", "out", "originals", "failed", ".work", "incoming"]:
        os.makedirs(f"{hot}/{sub}")
    os.makedirs(d + "/templates")
    shutil.copy(template, d + "/templates/web.json5")
    db = "d" + label.replace("-", "_").lower()
    psql(f"DROP DATABASE IF EXISTS {db}")
    psql(f"CREATE DATABASE {db}")
    names = ["h-a", "h-b", "h-c"]
    procs = []
    try:
        return drive(binary, case, label, d, hot, db, names, procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def drive(binary, case, label, d, hot, db, names, procs):
    """`one`'s run, its daemons in `procs` (stopped by the caller)."""
    for i, name in enumerate(names):
        os.makedirs(f"{d}/run-{i}")
        with open(f"{d}/config-{i}.json5", "w") as f:
            f.write(f'{{ templatesDir: "{d}/templates", inboxes: [ {{ name: "shop", root: "{hot}", template: "web" }} ],'
                    f' settle: "300ms", quiet: "3s", maxWait: "120s", maxBatch: 1000, workers: 2,'
                    f' cluster: {{ database: "host={tmp} dbname={db} user=photofinish", host: "{name}" }} }}')
        log = open(f"{d}/daemon-{i}.log", "w")
        env = dict(os.environ, RUNTIME_DIRECTORY=f"{d}/run-{i}", PHOTOFINISH_PROOF_SHRINK="16")
        procs.append(subprocess.Popen([binary, "daemon", "--config", f"{d}/config-{i}.json5"], stdout=log, stderr=log, env=env))

    def claimer():
        seen = set()
        for i in range(3):
            s = status(f"{d}/run-{i}")
            folders = (s or {}).get("inboxes") or [{}]
            seen.add(folders[0].get("claimer"))
        return seen.pop() if len(seen) == 1 else None

    ok = until(lambda: claimer() in names, 60)
    if not ok:
        raise RuntimeError(f"{label}: no claimer agreed on: {[status(f'{d}/run-{i}') for i in range(3)]}")
    holder = names.index(claimer())
    first = sorted(os.listdir(staging))
    half = len(first) // 2
    for name in first:
        shutil.copy(f"{staging}/{name}", f"{hot}/incoming/{name}")
    for name in first[:half]:
        os.rename(f"{hot}/incoming/{name}", f"{hot}/drop/{name}")

    def running():
        hosts = psql("SELECT DISTINCT host FROM photofinish.tasks WHERE state = 'running'", db).split()
        return [names.index(h) for h in hosts if h in names]

    def running_elsewhere():
        return [n for n in running() if n != holder]

    def open_batch():
        for m in glob.glob(hot + "/.work/*/manifest.json"):
            try:
                with open(m) as f:
                    if json.load(f).get("open") is True:
                        return True
            except (OSError, ValueError):
                pass
        return False

    # The first half all claimed into the claimer's open batch, and the claimer and a host that did
    # not claim it each finishing some of it (whichever dies then holds work).
    if not until(lambda: not os.listdir(hot + "/drop") and open_batch() and holder in running() and running_elsewhere(), 120):
        raise RuntimeError(f"{label}: the batch never opened with tasks elsewhere")
    victim = {"none": None, "claimer": holder, "other": (running_elsewhere() or [None])[0]}[case]
    moment = time.monotonic()
    if victim is not None:
        procs[victim].send_signal(signal.SIGKILL)
        procs[victim].wait()
    for name in first[half:]:
        os.rename(f"{hot}/incoming/{name}", f"{hot}/drop/{name}")
    done = until(lambda: reported(hot) >= photos and not [w for w in os.listdir(hot + "/.work") if not w.startswith(".")], 600, 0.1)
    took = time.monotonic() - moment
    batches = len(os.listdir(hot + "/out"))
    if not done:
        raise RuntimeError(f"{label}: not finished ({reported(hot)} of {photos})")
    return took, batches


print(f"PostgreSQL {run([pgbin + '/postgres', '--version']).split()[-1]}, fsync on; {os.cpu_count()} cores; "
      f"{photos} photos of 1600x1200 in two halves; {rounds} rounds; load {open('/proc/loadavg').read().split()[:3]}")
print(f"A = {binaries['A']}\nB = {binaries['B']}\n")
times = {}
for r in range(rounds):
    for case in ["none", "claimer", "other"]:
        order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
        for which in order:
            took, batches = one(binaries[which], case, f"{r}-{case}-{which}")
            times.setdefault((which, case), []).append(took)
            print(f"round {r} {case:8} {which}: {took:6.1f} s to the last report ({batches} batch{'es' if batches != 1 else ''}),"
                  f" load {open('/proc/loadavg').read().split()[0]}", flush=True)
print()
print("| binary | death | kill → every photo published (median; the runs) | cost of the death (median of run less that round's none) |")
print("|---|---|---|---|")
for which in ["A", "B"]:
    base = times[(which, "none")]
    for case in ["none", "claimer", "other"]:
        t = times[(which, case)]
        cost = "–" if case == "none" else f"{statistics.median([x - b for x, b in zip(t, base)]):+.1f} s"
        print(f"| {which} | {case} | {statistics.median(t):.1f} s ({', '.join(f'{x:.1f}' for x in t)}) | {cost} |")
