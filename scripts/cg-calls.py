#!/usr/bin/env python3
"""Calls and inclusive instruction counts per function from a callgrind output file
(scripts/ofi-callgrind.sh).

  cg-calls.py FILE N PATTERN...   per iteration (N iterations) and per call, for the functions
                                  whose name contains a PATTERN
  cg-calls.py --solve N POLLFN PINGPONG PINGWAIT
                                  from two runs of N receives with different numbers of polls
                                  (POLLFN: the poll function): MPI_Recv = s + (P - 1) e
"""
import collections
import re
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # output cut by `head`: no traceback


def resolve(s, table):
    """A compressed callgrind name `(N) name` or `(N)`, recorded in / looked up in `table`."""
    m = re.match(r"\((\d+)\)(?: (.*))?", s)
    if not m:
        return s
    if m.group(2):
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), s)


def parse(path):
    """{function: calls into it}, {function: inclusive cost of those calls} (self-calls
    excluded), from the `calls=` lines of a callgrind file (name compression resolved)."""
    names, calls, incl = {}, collections.Counter(), collections.Counter()
    fn = cfn = pending = None
    npos = 1  # position columns before the cost ("positions: instr line" with --dump-instr)

    def name(s):
        return resolve(s, names)

    for line in open(path):
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith("fn="):
            fn = name(line[3:].rstrip("\n"))
        elif line.startswith("cfn="):
            cfn = name(line[4:].rstrip("\n"))
        elif line.startswith("calls="):
            pending = int(line[6:].split()[0])
        elif pending is not None:
            parts = line.split()
            if len(parts) > npos and cfn != fn:
                calls[cfn] += pending
                incl[cfn] += int(parts[npos])
            pending = None
    return calls, incl


def pick(calls, incl, pat):
    """The calls and cost of the function matching `pat` with the most cost."""
    best = max((f for f in calls if pat in f), key=lambda f: incl[f], default=None)
    return (calls[best], incl[best]) if best else (0, 0)


def main():
    if sys.argv[1] == "--solve":
        n, pollfn = float(sys.argv[2]), sys.argv[3]
        rows = []
        for path in sys.argv[4:6]:
            c, i = parse(path)
            recv = pick(c, i, "MPI_Recv")[1] / n
            send = pick(c, i, "MPI_Send")[1] / n
            polls = pick(c, i, pollfn)[0] / n
            rows.append((recv, polls, send))
            print("%-40s MPI_Send %7.1f  MPI_Recv %8.1f  polls per receive %6.2f"
                  % (path.rsplit("/", 1)[-1], send, recv, polls))
        (r1, p1, _), (r2, p2, _) = rows
        if abs(p1 - p2) < 0.5:
            print("polls per receive too close in the two runs to separate e and s")
        else:
            e = (r1 - r2) / (p1 - p2)
            s = r1 - (p1 - 1) * e
            print("empty poll e = %.0f, receive that finds the reply s = %.0f, "
                  "latency path MPI_Send + s = %.0f instructions" % (e, s, rows[1][2] + s))
    else:
        c, i = parse(sys.argv[1])
        n = float(sys.argv[2])
        for f in sorted(c, key=lambda f: -i[f]):
            if any(p in f for p in sys.argv[3:]):
                print("%10.1f per iteration %7.2f calls %8.1f per call  %s"
                      % (i[f] / n, c[f] / n, i[f] / max(c[f], 1), f[:120]))


if __name__ == "__main__":
    main()
