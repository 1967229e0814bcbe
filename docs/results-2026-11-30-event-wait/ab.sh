#!/bin/bash
# ab.sh OUT VARIANT...: the variants alternated round by round (ROUNDS [6]), each program
# started near (near_gate 0.1): amlat e (the target in a broadcast's event wait) and
# coll_lat (2 ranks). DIR [/tmp/s44]: amlat and coll_lat built there with skifch-seq.mak,
# and DIR/VARIANT/libgasnet.so for each variant; REL: the release directory (skifrun,
# msgrate for the gate); run from the repository's top.
dir=${DIR:-/tmp/s44}
export rel=${REL:-$PWD/target/release} gate_dir=$(mktemp -d)
. scripts/near-gate.sh
out=$1; shift
: > "$out"
for r in $(seq "${ROUNDS:-6}"); do
  for v in "$@"; do
    g=$(near_gate 0.1)
    x=$(cd "$dir" && LD_LIBRARY_PATH=$dir/$v timeout 60 "$rel/skifrun" -n 2 -- ./amlat e 500000 5 2>/dev/null | awk '{print $3}')
    echo "$r $v amlat_e $g $x" >> "$out"
    g=$(near_gate 0.1)
    (cd "$dir" && LD_LIBRARY_PATH=$dir/$v timeout 120 "$rel/skifrun" -n 2 -- ./coll_lat "$v" 20000 5 2>/dev/null) | sed "s/^/$r n2 $g /" >> "$out"
  done
done
