#!/bin/bash
# ab.sh OUT VARIANT...: gasnet_bench with each variant's libgasnet.so, alternated, near-gated
cd /work/main
export rel=/work/main/target/release gate_dir=$(mktemp -d)
. scripts/near-gate.sh
out=$1; shift
for r in $(seq "${ROUNDS:-6}"); do
  for v in "$@"; do
    g=$(near_gate ${GATE:-0.08})
    LD_LIBRARY_PATH=/tmp/ab/$v timeout 120 $rel/skifrun -n 2 -- /tmp/ab/gasnet_bench -i $v -t ${T:-0.2} -r 5 2>/dev/null | grep -E "am_short_lat|msgrate|latency" | sed "s/^/$r $g /" >> "$out"
  done
done
