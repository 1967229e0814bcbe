#!/usr/bin/env python3
"""Self instructions per iteration grouped by layer, from a callgrind file of
scripts/ofi-callgrind.sh (written with --dump-instr=yes, so that code inlined from another
source file counts to that file's layer).

  cg-layers.py FILE N [TOP]
FILE: e.g. the latency-path file (mode pingfirst, N iterations). A project source file
splits the drivers' functions (skifch-drivers/src/ofi/: the ofi driver; hier.rs, any.rs and
the node's shm port: the hierarchy); otherwise the function decides (mpi-lite and the
protocol; code of the standard library counts to the function it is inlined into);
libfabric and libc by object.
Prints the polls per receive (the latency path is clean at ~1.0: a late reply adds empty
polls), the layers, and the TOP (default 45) functions by self cost.
"""
import collections
import importlib.util
import os
import sys

_spec = importlib.util.spec_from_file_location(
    "cg_calls", os.path.join(os.path.dirname(os.path.abspath(__file__)), "cg-calls.py"))
cg_calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cg_calls)

LAYERS = [
    # `HierAnyPort` and `DynPort` name the hierarchy's frames in files written before the far
    # half (docs/results-2026-11-30-far-half); since then `DynPort` is only a wrapped or
    # forwarded port's (the fault injector, `fwd`), which these jobs do not have.
    ("hierarchy", lambda f, o: "HierAnyPort" in f or "skifch_drivers::hier" in f or "DynPort" in f
     or "skifch_drivers::shm::far" in f),
    ("ofi driver", lambda f, o: "skifch_drivers::ofi" in f or "PortState>" in f),
    ("mpi-lite+protocol", lambda f, o: "mpi_lite" in f or f.startswith("PMPI_") or f.startswith("MPI_")
     or f.startswith("skifch::") or f.startswith("<skifch::") or "skifch::" in f),
    ("libfabric", lambda f, o: "libfabric" in o),
    ("libc", lambda f, o: "libc" in o or "ld-linux" in o),
]


FILES = [
    ("skifch-drivers/src/ofi/", "ofi driver"),
    ("skifch-drivers/src/hier.rs", "hierarchy"),
    ("skifch-drivers/src/any.rs", "hierarchy"),
    ("skifch-drivers/src/shm/", "hierarchy"),
]


def layer(f, o, fl=""):
    # Within the drivers' functions the source file splits the ofi driver from the
    # hierarchy (code inlined across them); elsewhere the function decides, as in
    # docs/results-2026-11-29-ofi-latency2 (the AnyPort dispatch inlined into mpi-lite
    # counts to mpi-lite).
    if "skifch_drivers" in f:
        for pre, name in FILES[:4]:
            if pre in fl:
                return name
    for name, test in LAYERS:
        if test(f, o):
            return name
    return "other (" + o.rsplit("/", 1)[-1] + ")"


def parse(path):
    """{(function, object, source file): self cost}, {function: calls into it}."""
    names, obs, files = {}, {}, {}
    fl = cur = ""
    selfc, calls = collections.Counter(), collections.Counter()
    fn = ob = None
    after_calls = False
    npos = 1

    name = cg_calls.resolve
    cfn = None
    for line in open(path):
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith("ob="):
            ob = name(line[3:].rstrip("\n"), obs)
        elif line.startswith("cob="):
            name(line[4:].rstrip("\n"), obs)
        elif line.startswith("fl="):
            fl = cur = name(line[3:].rstrip("\n"), files)
        elif line.startswith(("fi=", "fe=")):
            cur = name(line[3:].rstrip("\n"), files)
        elif line.startswith(("cfi=", "cfl=")):
            name(line[4:].rstrip("\n"), files)
        elif line.startswith("fn="):
            fn = name(line[3:].rstrip("\n"), names)
            cur = fl
        elif line.startswith("cfn="):
            cfn = name(line[4:].rstrip("\n"), names)
        elif line.startswith("calls="):
            after_calls = True
            if cfn != fn:
                calls[cfn] += int(line[6:].split()[0])
        elif line and (line[0].isdigit() or line[0] in "+-*") and fn is not None:
            parts = line.split()
            if after_calls:
                after_calls = False
            elif len(parts) > npos:
                selfc[(fn, ob or "?", cur)] += int(parts[npos])
    return selfc, calls


def by_layer(selfc, n):
    out = collections.Counter()
    for (f, o, fl), c in selfc.items():
        out[layer(f, o, fl)] += c / n
    return out


def polls(calls, n, pat):
    best = max((f for f in calls if pat in f), key=lambda f: calls[f], default=None)
    return calls[best] / n if best else 0


def main():
    path, n = sys.argv[1], float(sys.argv[2])
    sf, cf = parse(path)
    # mpi_loop's MPI_Iprobe: one uncounted poll an iteration (its call is recorded). The
    # hierarchy's receive was a function of its own before this pass's dispatch change (its
    # calls counted), the ofi port's since (every poll of a rank alone on its node reaches it).
    # Since the far half (docs/results-2026-11-30-far-half) the fabric's turns are counted
    # (`far_turn`: the Iprobe does not reach them).
    p = max(polls(cf, n, "HierAnyPort as skifch::driver::Port>::recv_into"),
            polls(cf, n, "OfiPort as skifch::driver::Port>::recv_into"))
    p = max(p - 1, polls(cf, n, "RingPort<R>>::far_turn"))
    print("polls per receive: %.2f" % p)
    lf = by_layer(sf, n)
    tot = 0
    for k in sorted(lf, key=lambda k: -lf[k]):
        if lf[k] >= 0.5:
            print("%-22s %9.1f" % (k, lf[k]))
        tot += lf[k]
    print("%-22s %9.1f" % ("total", tot))
    print("\ntop functions (self, per iteration):")
    top = collections.Counter()
    for (f, o, fl), c in sf.items():
        top[f] += c / n
    for f, c in top.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 45):
        print("%8.1f  %s" % (c, f[:130]))


main()
