"""Issue 19's speed targets from a scripts/armci-bench.sh run, as markdown tables.

Usage: python3 scripts/armci-ratios.py OUT_DIR   (OUT_DIR holds round-N.csv, one per round)

Per target point: armci-shim's median over the rounds, the best ARMCI-MPI's median (the
better of armci-mpi-openmpi and armci-mpi-mpich), the ratio of the medians, and the range
of the same ratio taken within each round (both sides of one round ran back to back), then
the verdict (best of armci-mpi-openmpi, -openmpi-sm and -mpich). Latency ratios are ours/peer (target <= 0.3); bandwidth ratios ours/peer
(strided: >= 2 up to 64 KiB) and ours/memcpy of the same program run (1 MiB: >= 0.8).
Beside Rmw, the floor: armci_bench.c's atomic_lat, one bare locked fetch-and-add on a
private word in the same run (no Rmw takes less), against the best peer's Rmw.
Then the medians of every test, size and impl.
"""
import csv
import glob
import os
import statistics
import sys

PEERS = ["armci-mpi-openmpi", "armci-mpi-openmpi-sm", "armci-mpi-mpich"]


def load(path):
    d = {}
    for r in csv.reader(open(path)):
        if len(r) < 5 or r[0] == "impl" or r[0].startswith("#"):
            continue
        d[(r[0], r[1], int(r[2]))] = float(r[3])
    return d


out = sys.argv[1]
files = sorted(glob.glob(os.path.join(out, "round-*.csv")), key=lambda p: int(p.split("-")[-1][:-4]))
rounds = [load(f) for f in files]
keys = sorted({k for r in rounds for k in r}, key=lambda k: (k[1], k[2], k[0]))


def med(k):
    v = [r[k] for r in rounds if k in r]
    return statistics.median(v) if v else None


def best_peer(test, size, lat, src):
    """(value, impl) of the best peer in one round's dict or the medians."""
    c = [(src(p, test, size), p) for p in PEERS]
    c = [x for x in c if x[0] is not None and x[0] > 0]
    if not c:
        return None, None
    return (min(c) if lat else max(c))


def row(test, size, ref, target, ok):
    lat = test.endswith("_lat")
    ours = med(("armci-shim", test, size))
    if ref == "peer":
        theirs, who = best_peer(test, size, lat, lambda p, t, s: med((p, t, s)))
        per = []
        for r in rounds:
            v, _ = best_peer(test, size, lat, lambda p, t, s: r.get((p, t, s)))
            if v and ("armci-shim", test, size) in r:
                per.append(r[("armci-shim", test, size)] / v)
    else:  # the same run's baseline (memcpy, a bare atomic)
        theirs = med(("armci-shim", ref, size))
        who = "memcpy (memcpy_bw)" if ref == "memcpy_bw" else f"({ref})"
        per = [r[("armci-shim", test, size)] / r[("armci-shim", ref, size)]
               for r in rounds if ("armci-shim", test, size) in r and ("armci-shim", ref, size) in r]
    if ours is None or theirs is None:
        return f"| {test} | {size} | - | - | - | - | {target} | not measured |"
    ratio = ours / theirs
    unit = "us" if lat else "MB/s"
    fmt = (lambda v: f"{v:.3f} {unit}") if lat else (lambda v: f"{v:.0f} {unit}")
    rng = f"{min(per):.2f}–{max(per):.2f}" if per else "-"
    verdict = "met" if ok(ratio) else "**missed**"
    return f"| {test} | {size} | {fmt(ours)} | {fmt(theirs)} {who} | {ratio:.3f} | {rng} | {target} | {verdict} |"


print(f"{len(rounds)} rounds ({', '.join(os.path.basename(f) for f in files)})\n")
print("| test | size (B) | armci-shim (median) | best peer (median) | ratio | per-round ratios | target | |")
print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for t in ["put_lat", "get_lat", "rmw_lat"]:
    print(row(t, 8, "peer", "≤ 0.3", lambda x: x <= 0.3))
# No Rmw takes less than one locked atomic: the floor, and the best peer against it
floor = med(("armci-shim", "atomic_lat", 8))
if floor:
    theirs, who = best_peer("rmw_lat", 8, True, lambda p, t, s: med((p, t, s)))
    print(f"| (floor) atomic_lat | 8 | {floor:.3f} us | {theirs or 0:.3f} us {who} | "
          f"{floor / theirs if theirs else 0:.3f} | - | the least any Rmw can take | |")
for t in ["puts_bw", "gets_bw"]:
    for s in [512, 2048, 8192, 32768]:
        print(row(t, s, "peer", "≥ 2", lambda x: x >= 2))
for t in ["put_bw", "get_bw"]:
    print(row(t, 1 << 20, "memcpy_bw", "≥ 0.8 × memcpy", lambda x: x >= 0.8))
print()
print("Not targets (for the record):\n")
print("| test | size (B) | armci-shim (median) | best peer (median) | ratio | per-round ratios | | |")
print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for t, s in [("put_lat", 64), ("put_lat", 1024), ("get_lat", 64), ("get_lat", 1024), ("acc_lat", 8),
             ("acc_lat", 1024)]:
    print(row(t, s, "peer", "", lambda x: x <= 1).replace("| met |", "| |").replace("| **missed** |", "| slower |"))
print(row("rmw_lat", 8, "atomic_lat", "", lambda x: True).replace("| met |", "| Rmw / bare atomic |"))
for t in ["puts_bw", "gets_bw"]:
    for s in [131072, 524288, 2097152, 8388608]:
        print(row(t, s, "peer", "", lambda x: x >= 1).replace("| met |", "| |").replace("| **missed** |", "| slower |"))
print()
impls = ["armci-shim"] + PEERS
print("Medians over the rounds:\n")
print("| test | size (B) | " + " | ".join(impls) + " |")
print("| --- | ---: |" + " ---: |" * len(impls))
for test, size in sorted({(k[1], k[2]) for k in keys}):
    cells = []
    for i in impls:
        v = med((i, test, size))
        cells.append("-" if v is None else (f"{v:.3f}" if test.endswith("_lat") else f"{v:.0f}"))
    print(f"| {test} | {size} | " + " | ".join(cells) + " |")
