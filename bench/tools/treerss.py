#!/usr/bin/env python3
"""Runs a command and writes the peak of the summed RSS of its whole process tree.

    treerss.py OUT -- COMMAND...

Every 50 ms the resident set sizes of the command and all its descendants are added up
(/proc/PID/statm); OUT gets the highest sum seen, in KiB. This is "all worker processes
together" (pages shared between forked workers are counted in each, as `ps` and GNU time
count them); GNU time's %M is the largest single process. Exits with the command's status.
"""
import os
import subprocess
import sys
import time

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def tree_rss(root):
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE_KIB
        except OSError:
            pass
    return total


def main():
    out, sep, command = sys.argv[1], sys.argv[2], sys.argv[3:]
    assert sep == "--" and command, __doc__
    child = subprocess.Popen(command)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(child.pid))
        time.sleep(0.05)
    with open(out, "w") as f:
        f.write(f"{peak}\n")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
