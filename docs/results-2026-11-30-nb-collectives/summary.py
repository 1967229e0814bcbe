"""summary.py CSV: per op, the medians of new and base and the per-round ratios (rounds
alternated, each program after the near gate)."""
import csv, statistics as st, collections, sys
d = collections.defaultdict(dict)
for r in csv.reader(open(sys.argv[1])):
    d[(r[0], r[3])][r[2]] = float(r[4])
for op in ['barrier', 'barrier_split', 'bcast8', 'allreduce8', 'reduce8', 'allreduce8_x8']:
    rs = [v for k, v in sorted(d.items()) if k[1] == op and 'new' in v and 'base' in v]
    ratios = [v['new'] / v['base'] for v in rs]
    print(f"{op:15s} new {st.median([v['new'] for v in rs]):.3f} us  base {st.median([v['base'] for v in rs]):.3f} us"
          f"  new/base per round: median {st.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
