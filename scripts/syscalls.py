#!/usr/bin/env python3
"""System calls per iteration from two runs of N and 2N iterations (scripts/ofi-syscalls.sh).

  syscalls.py N PERF1 PERF2 [STRACE1 STRACE2]
  syscalls.py --per-send PERF [STRACE]    one run each, per sendto call
PERF*: `perf stat -x,` output with syscalls:sys_enter_* and context-switches;
STRACE*: `strace -f -o` output. Prints (2N run - N run) / N per kind; for strace by kind and
result: `EAGAIN` (or another errno), `=0` (nothing: 0 events, 0 bytes), `>0` (something).
"""
import collections
import os
import re
import sys


def perf(path):
    c = collections.Counter()
    for line in open(path):
        f = line.strip().split(",")
        if len(f) < 3 or not f[0].replace(".", "").isdigit():
            continue
        ev = f[2].replace("syscalls:sys_enter_", "")
        c[ev] += float(f[0]) * (1e3 if ev == "task-clock" else 1)  # msec -> us
        if ev == "context-switches":
            c["time (us)"] = float(f[3]) / 1e3  # the counter's enabled time: the run's
    return c


CALL = re.compile(r"^(?:\[pid\s+)?\d*\]?\s*(\w+)\(.*\)\s+=\s+(-?\d+|\?)(?:\s+(E[A-Z]+))?")
RESUMED = re.compile(r"^\d+\s+<\.\.\. (\w+) resumed>.*=\s+(-?\d+|\?)(?:\s+(E[A-Z]+))?")


def strace(path):
    c = collections.Counter()
    for line in open(path):
        line = line.strip()
        m = CALL.match(re.sub(r"^\d+\s+", "", line)) or RESUMED.match(line)
        if not m:
            continue  # "<unfinished ...>" halves are counted at their "resumed" line
        name, ret, err = m.groups()
        if err:
            res = err
        elif ret == "?":
            res = "?"
        else:
            res = "=0" if int(ret) == 0 else ">0"
        c[(name, res)] += 1
    return c


def diff(a, b, n):
    return {k: (b[k] - a[k]) / n for k in set(a) | set(b)}


def per_send(c):
    """Counts divided by the sendto calls (one per round trip on rank 0)."""
    sends = sum(v for k, v in c.items() if (k[0] if isinstance(k, tuple) else k) == "sendto")
    return {k: v / sends for k, v in c.items()} if sends else {}


def main():
    if sys.argv[1] == "--per-send":  # one run each: PERF [STRACE]
        p = per_send(perf(sys.argv[2]))
        s = per_send(strace(sys.argv[3])) if len(sys.argv) > 3 and os.path.exists(sys.argv[3]) else None
        report(p, s)
        return
    n = int(sys.argv[1])
    p = diff(perf(sys.argv[2]), perf(sys.argv[3]), n)
    s = None
    if len(sys.argv) >= 6 and all(os.path.exists(f) for f in sys.argv[4:6]):
        s = diff(strace(sys.argv[4]), strace(sys.argv[5]), n)
    report(p, s)


def report(p, s):
    print("perf stat, per round trip (rank 0, all threads):")
    tot = 0.0
    for k, v in sorted(p.items(), key=lambda kv: -kv[1]):
        if abs(v) >= 0.005 and k not in ("context-switches", "cpu-migrations", "time (us)", "task-clock"):
            print("  %-20s %8.3f" % (k, v))
            tot += v
    print("  %-20s %8.3f" % ("all system calls", tot))
    for k in ("context-switches", "cpu-migrations", "time (us)", "task-clock"):
        print("  %-20s %8.3f" % (k + (" (us)" if k == "task-clock" else ""), p.get(k, 0.0)))
    polls = p.get("epoll_wait", 0.0) + p.get("poll", 0.0)
    if polls > 0:
        print("  %-20s %8.3f" % ("CPU us per (e)poll", p.get("task-clock", 0.0) / polls))
    if s is None:
        return
    print("strace -f (no futex), per round trip by result:")
    tot = 0.0
    for k, v in sorted(s.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if abs(v) >= 0.005:
            print("  %-16s %-7s %8.3f" % (k[0], k[1], v))
            tot += v
    print("  %-24s %8.3f" % ("all (no futex)", tot))


main()
