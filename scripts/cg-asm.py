#!/usr/bin/env python3
"""Disassembly of the functions whose name contains PAT, each instruction with its self
count divided by N, from a callgrind file written with --dump-instr=yes (addresses are
offsets in LIB, the shared object the function is in).

  cg-asm.py FILE N LIB PAT [MIN]
Prints the instructions executed at least MIN times (default 0.5) per N. With N = 1 and
MIN = the messages of a run, what is left is the path every message takes: e.g. the
node's receive in `HierAnyPort::recv_into` of a LOCAL=1 run of scripts/ofi-callgrind.sh
(CG_OPTS=--dump-instr=yes), counted in docs/results-2026-11-29-ofi-latency4 (since the far
half, docs/results-2026-11-30-far-half, that receive is inline in mpi-lite's).

  cg-asm.py --path FILE N
A spinning program's path apart from its polling: the instructions executed 0.95-1.6 times
per N (once per operation: the path a message takes) and those executed more often (the
empty polls of its waits), per function. For a ping-pong whose loops are inlined, e.g.
benches/examples/proto_pp under callgrind with N its round trips
(docs/results-2026-11-30-am-short-layers).

  cg-asm.py --lines FILE N [MIN] [OBJ]
The code's footprint instead: per shared object, the distinct 64-byte lines holding an
instruction executed at least MIN times per N (default 0.9: every iteration's path), and
with OBJ (a part of an object's name) per function of that object
(docs/results-2026-11-30-fabric-footprint).
"""
import collections
import importlib.util
import os
import re
import subprocess
import sys

_spec = importlib.util.spec_from_file_location(
    "cg_calls", os.path.join(os.path.dirname(os.path.abspath(__file__)), "cg-calls.py"))
cg_calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cg_calls)


def counts(path, pat=""):
    """{(object, function, instruction address): self count} of the functions whose name
    contains `pat` (relative positions resolved; the cost lines after `calls=` are
    inclusive, skipped)."""
    names, obs, fn, ob, skip, npos, pos = {}, {}, None, None, False, 1, [0, 0]
    cnt = collections.Counter()
    for line in open(path):
        head = line[:4]
        if head == "posi":
            npos = len(line.split()) - 1
        elif head[:3] == "ob=" or head == "cob=":
            o = cg_calls.resolve(line[line.index("=") + 1:].rstrip("\n"), obs)
            ob = o if head[:3] == "ob=" else ob
        elif head[:3] == "fn=" or head == "cfn=":
            f = cg_calls.resolve(line[line.index("=") + 1:].rstrip("\n"), names)
            fn = f if head[:3] == "fn=" else fn
        elif head == "call":
            skip = True
        elif line[:1].isdigit() or line[:1] in ("+", "-", "*"):
            parts = line.split()
            for k, p in enumerate(parts[:npos]):
                if p[0] in "+-":
                    pos[k] += int(p[0] + str(int(p[1:], 0)))
                elif p != "*":
                    pos[k] = int(p, 0)
            if not skip and fn is not None and len(parts) > npos and pat in fn:
                cnt[(ob, fn, pos[0])] += int(parts[npos])
            skip = False
    return cnt


def lines(path, n, least, obj):
    """The --lines mode (module docs)."""
    per_ob, per_fn = collections.defaultdict(set), collections.defaultdict(set)
    ins_ob, ins_fn = collections.Counter(), collections.Counter()
    for (ob, fn, a), c in counts(path).items():
        if c / n < least:
            continue
        o = os.path.basename(ob or "?")
        per_ob[o].add(a >> 6)
        ins_ob[o] += c / n
        if obj and obj in o:
            per_fn[fn].add(a >> 6)
            ins_fn[fn] += c / n
    for o in sorted(per_ob, key=lambda o: -len(per_ob[o])):
        print("%-40s %5d lines %8.1f instructions" % (o, len(per_ob[o]), ins_ob[o]))
    print("%-40s %5d lines %8.1f instructions" % ("total", sum(map(len, per_ob.values())),
                                                 sum(ins_ob.values())))
    for f in sorted(per_fn, key=lambda f: -len(per_fn[f])):
        print("%5d lines %8.1f instructions  %s" % (len(per_fn[f]), ins_fn[f], f[:140]))


def path_and_loop(path, n):
    """The --path mode (module docs)."""
    once, loop, distinct = (collections.Counter() for _ in range(3))
    for (_, fn, _), c in counts(path).items():
        r = c / n
        if 0.95 <= r <= 1.6:
            once[fn] += r
        elif r > 1.6:
            loop[fn] += r
            distinct[fn] += 1
    print("path (0.95-1.6 per op): %.0f instructions" % sum(once.values()))
    for f, v in once.most_common(12):
        print("   %6.1f  %s" % (v, f[:110]))
    print("loop (> 1.6 per op): %.0f executed, %d distinct" % (sum(loop.values()),
                                                               sum(distinct.values())))
    for f, v in loop.most_common(5):
        print("   %6.1f %4d  %s" % (v, distinct[f], f[:100]))


def main():
    if sys.argv[1] == "--path":
        return path_and_loop(sys.argv[2], float(sys.argv[3]))
    if sys.argv[1] == "--lines":
        a = sys.argv[2:]
        return lines(a[0], float(a[1]), float(a[2]) if len(a) > 2 else 0.9,
                     a[3] if len(a) > 3 else None)
    path, n, lib, pat = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
    least = float(sys.argv[5]) if len(sys.argv) > 5 else 0.5
    cnt = collections.Counter()
    for (_, _, a), c in counts(path, pat).items():
        if a >= 0x1000:
            cnt[a] += c
    if not cnt:
        sys.exit("no instruction counts (written without --dump-instr=yes?)")
    lo, hi = min(cnt), max(cnt)
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", lib,
                          "--start-address=0x%x" % lo, "--stop-address=0x%x" % (hi + 1)],
                         capture_output=True, text=True).stdout
    total = shown = 0
    for l in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s*(.*)", l)
        if m:
            c = cnt.get(int(m.group(1), 16), 0) / n
            if c >= least:
                print("%10.1f  %s" % (c, l.strip()))
                total += c
                shown += 1
    print("%d instructions, %.1f executed (per %g)" % (shown, total, n))


main()
