#!/usr/bin/env python3
"""ratios.py MODE [DIR]: the median over the rounds of each point of MODE's CSVs (MODE-r*.csv,
written by run.sh), mpi-lite against the best peer (Open MPI's default osc, osc/sm, osc/ucx,
MPICH) and, for the bandwidths, against the same run's memcpy_bw; latencies as ours/peer
(the targets: <= 0.5), rates and bandwidths as ours/peer (>= 2, >= 0.8 x memcpy)."""
import csv, glob, os, statistics, sys

mode = sys.argv[1] if len(sys.argv) > 1 else "best"
d = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
vals = {}
for f in sorted(glob.glob(os.path.join(d, f"{mode}-r*.csv"))):
    for r in csv.DictReader(open(f)):
        vals.setdefault((r["impl"], r["test"], int(r["size"])), []).append(float(r["value"]))
med = {k: statistics.median(v) for k, v in vals.items()}
peers = ["openmpi", "openmpi-osc-sm", "openmpi-osc-ucx", "mpich"]
lower = {"put", "get", "acc", "fop", "cas", "lock_put"}
tests = sorted({(t, s) for (i, t, s) in med if i == "mpi-lite" and t != "memcpy_bw"},
               key=lambda x: (["put", "get", "acc", "fop", "cas", "put_rate", "lock_put",
                               "put_bw", "get_bw"].index(x[0]), x[1]))
print(f"| test | size | mpi-lite | best peer | peer | ratio (ours/peer) | memcpy | ours/memcpy |")
print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
for t, s in tests:
    ours = med[("mpi-lite", t, s)]
    got = [(med[(p, t, s)], p) for p in peers if (p, t, s) in med and med[(p, t, s)] > 0]
    best = (min if t in lower else max)(got) if got else None
    mc = med.get(("mpi-lite", "memcpy_bw", s)) if t.endswith("_bw") else None
    print(f"| {t} | {s} | {ours:.4g} | {best[0]:.4g} | {best[1]} | {ours / best[0]:.2f} |"
          if best else f"| {t} | {s} | {ours:.4g} | - | - | - |", end="")
    print(f" {mc:.4g} | {ours / mc:.2f} |" if mc else " | |")
