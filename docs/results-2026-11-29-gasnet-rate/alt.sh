#!/bin/bash
# alt.sh LOOPS OUT "label:ENV=.. ENV=.." ...: alternates variants of gasnet_bench (GB, built with
# experiment-bench.diff; ONLYSTREAM) under REL/skifrun; CSV label,test,value,loop; medians.
loops=$1; out=$2; shift 2
: > $out
for i in $(seq 1 $loops); do
  for v in "$@"; do
    label=${v%%:*}; envs=${v#*:}
    "$(dirname "$0")/idle.sh" 90 60 || echo "# busy" >&2
    env $envs ONLYSTREAM=1 ${REL:-target/release}/skifrun -n 2 -- ${GB:-./gb} 2>/dev/null | grep msgrate | awk -F, -v l=$label -v i=$i '{print l","$2","$4","i}' >> $out
  done
done
python3 - $out <<'PY'
import sys,statistics as st,collections
d=collections.defaultdict(list)
for line in open(sys.argv[1]):
    l,t,v,i=line.strip().split(','); d[(l,t)].append(float(v)/1e6)
for k in sorted(d): 
    v=sorted(d[k]); print(k, "n=%d median %.1f  q75 %.1f max %.1f" % (len(v), st.median(v), v[int(len(v)*0.75)], v[-1]))
PY
