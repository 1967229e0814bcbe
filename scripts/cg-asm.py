#!/usr/bin/env python3
"""Disassembly of the functions whose name contains PAT, each instruction with its self
count divided by N, from a callgrind file written with --dump-instr=yes (addresses are
offsets in LIB, the shared object the function is in).

  cg-asm.py FILE N LIB PAT [MIN]
Prints the instructions executed at least MIN times (default 0.5) per N. With N = 1 and
MIN = the messages of a run, what is left is the path every message takes: e.g. the
node's receive in `HierAnyPort::recv_into` of a LOCAL=1 run of scripts/ofi-callgrind.sh
(CG_OPTS=--dump-instr=yes), counted in docs/results-2026-11-29-ofi-latency4.
"""
import collections
import re
import subprocess
import sys


def resolve(s, table):
    m = re.match(r"\((\d+)\)(?: (.*))?", s)
    if not m:
        return s
    if m.group(2):
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), s)


def main():
    path, n, lib, pat = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
    least = float(sys.argv[5]) if len(sys.argv) > 5 else 0.5
    names, fn, after, npos, pos = {}, None, False, 1, [0, 0]
    cnt = collections.Counter()
    for line in open(path):
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith("fn="):
            fn = resolve(line[3:].rstrip("\n"), names)
        elif line.startswith("cfn="):
            resolve(line[4:].rstrip("\n"), names)
        elif line.startswith("calls="):
            after = True
        elif line and (line[0].isdigit() or line[0] in "+-*") and fn is not None:
            parts = line.split()
            for k in range(min(npos, len(parts))):
                p = parts[k]
                if p[0] in "+-":
                    pos[k] += int(p[0] + str(int(p[1:], 0)))
                elif p != "*":
                    pos[k] = int(p, 0)
            if after:
                after = False
                continue
            if len(parts) > npos and pat in fn:
                cnt[pos[0]] += int(parts[npos])
    cnt = {a: c for a, c in cnt.items() if a >= 0x1000}
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
