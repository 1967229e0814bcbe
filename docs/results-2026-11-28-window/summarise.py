#!/usr/bin/env python3
"""summarise.py RATES.CSV: medians over rounds per (test, size) for each library, and the
same-run ratio mpi-lite / best other MPI per round (msg/s: higher is better, so the ratio is
lite/best; us: lower is better, so best/lite), with its median. Markdown on stdout."""
import csv, statistics, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
val = defaultdict(dict)  # (test, size) -> {(round, impl): value}
unit = {}
for r in rows:
    k = (r["test"], int(r["size"]))
    val[k][(r["round"], r["impl"])] = float(r["value"])
    unit[k] = r["unit"]
impls = ["mpi-lite", "openmpi", "mpich"]
print("| test | size | unit | " + " | ".join(impls) + " | mpi-lite vs best other, per round | median |")
print("| --- | ---: | --- | " + " | ".join("---:" for _ in impls) + " | --- | ---: |")
for k in sorted(val):
    v = val[k]
    rounds = sorted({rd for rd, _ in v}, key=int)
    med = []
    for i in impls:
        xs = [v[(rd, i)] for rd in rounds if (rd, i) in v]
        m = statistics.median(xs) if xs else float("nan")
        med.append(f"{m/1e6:.2f} M" if unit[k] == "msg/s" else f"{m:.2f}")
    ratios = []
    for rd in rounds:
        if (rd, "mpi-lite") not in v:
            continue
        others = [v[(rd, i)] for i in impls[1:] if (rd, i) in v]
        if not others:
            continue
        lite = v[(rd, "mpi-lite")]
        ratios.append(lite / max(others) if unit[k] == "msg/s" else min(others) / lite)
    rs = " / ".join(f"{x:.2f}" for x in ratios)
    mr = f"{statistics.median(ratios):.2f}x" if ratios else "-"
    print(f"| {k[0]} | {k[1]} | {unit[k]} | " + " | ".join(med) + f" | {rs} | {mr} |")
