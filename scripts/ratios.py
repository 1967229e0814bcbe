"""Per-round ratios of a combined MsgRate run (raw channels vs the raw ring and the MPIs).

Usage: python3 scripts/ratios.py WORK_DIR [ROUNDS]   (WORK_DIR: the run's --work-dir, holding
raw-rN.csv and peers-<group>-rN.csv). Ratios are taken within a round; the last column is
their median. Rates: ours/peer (> 1 = ours faster); latency: ours/ring (< 1 = ours faster).
"""
import csv, os, statistics, sys

def load(path):
    d = {}
    if not os.path.exists(path):
        return d
    for r in csv.reader(open(path)):
        if len(r) < 5 or r[0] == "impl":
            continue
        try:
            d[(r[0], r[1], int(r[2]))] = float(r[3])
        except ValueError:
            pass
    return d

work = sys.argv[1]  # e.g. docs/results-2026-11-22-v4/rounds-a
n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
rows = []
def fmt(v, t):
    return f"{v/1e6:.1f}M" if t == "msgrate" and v >= 1e6 else (f"{v/1e3:.0f}k" if t == "msgrate" else f"{v:.3f}")
checks = [("msgrate", 8, "rawring", "rate >= 0.7x"), ("msgrate", 64, "rawring", "rate >= 0.7x"),
          ("msgrate", 2048, "rawring", "rate >= 0.7x / bw >= 0.8x"), ("msgrate", 4096, "rawring", "bw >= 0.8x"),
          ("msgrate", 16384, "rawring", "bw >= 0.8x"), ("msgrate", 65536, "rawring", "bw >= 0.8x"),
          ("latency", 8, "rawring", "<= 1.3x"), ("msgrate", 8, "bestmpi", ">= 3x")]
print("| test | size | vs | ours per round | peer per round | ratio per round | median | target |")
print("| --- | ---: | --- | --- | --- | --- | ---: | --- |")
for t, s, vs, target in checks:
    ours, peer, ratio = [], [], []
    for r in range(1, n + 1):
        o = load(f"{work}/raw-r{r}.csv").get(("skifch-shm", t, s))
        if vs == "rawring":
            p = load(f"{work}/peers-rawring-r{r}.csv").get(("rawring", t, s))
        else:
            cands = [load(f"{work}/peers-{g}-r{r}.csv").get((g, t, s)) for g in ("openmpi", "openmpi-ucx", "mpich")]
            cands = [c for c in cands if c]
            p = max(cands) if cands else None
        if o is None or p is None:
            continue
        ours.append(fmt(o, t)); peer.append(fmt(p, t)); ratio.append(o / p)
    if ratio:
        print(f"| {t} | {s} | {vs} | {', '.join(ours)} | {', '.join(peer)} | {', '.join(f'{x:.2f}' for x in ratio)} | **{statistics.median(ratio):.2f}** | {target} |")
