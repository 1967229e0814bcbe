#!/usr/bin/env python3
"""summarise.py RATES.csv -- medians per (test, size) of run-gated.sh's CSV and the ratio of
lite-new to the better of openmpi and mpich in each round (and to lite-old when present)."""
import csv, statistics as st, sys

d = {}
for rnd, impl, test, size, val, unit in csv.reader(open(sys.argv[1])):
    d.setdefault((test, int(size)), {}).setdefault(impl, {})[int(rnd)] = float(val)
impls = [i for i in ("lite-old", "lite-new", "openmpi", "mpich") if any(i in v for v in d.values())]
print("| test | size | " + " | ".join(impls) + " | lite-new / best peer per round | median |"
      + (" lite-new / lite-old |" if "lite-old" in impls else ""))
print("| --- | ---: | " + " | ".join("---:" for _ in impls) + " | --- | ---: |"
      + (" ---: |" if "lite-old" in impls else ""))
for k in sorted(d):
    v = d[k]
    med = lambda i: st.median(v[i].values())
    rounds = sorted(v["lite-new"])
    ratios = [v["lite-new"][r] / max(v["openmpi"][r], v["mpich"][r]) for r in rounds]
    line = f"| {k[0]} | {k[1]} | " + " | ".join(f"{med(i) / 1e6:.2f} M" for i in impls)
    line += f" | {' / '.join(f'{x:.2f}' for x in ratios)} | {st.median(ratios):.2f}x |"
    if "lite-old" in impls:
        line += f" {med('lite-new') / med('lite-old'):.2f}x |"
    print(line)
