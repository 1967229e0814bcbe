#!/bin/bash
# ab-oversubscribed.sh OUT VARIANT...: coll_lat with 4 and 3 ranks on the 2 vCPUs, the
# variants alternated (6 rounds; no gate: ranks share CPUs). DIR and REL as in ab.sh.
dir=${DIR:-/tmp/s44}
rel=${REL:-$PWD/target/release}
out=$1; shift
: > "$out"
for r in 1 2 3 4 5 6; do
  for v in "$@"; do
    (cd "$dir" && LD_LIBRARY_PATH=$dir/$v timeout 120 "$rel/skifrun" -n 4 -- ./coll_lat "$v" 2000 5 2>/dev/null) | sed "s/^/$r n4 - /" >> "$out"
    (cd "$dir" && LD_LIBRARY_PATH=$dir/$v timeout 120 "$rel/skifrun" -n 3 -- ./coll_lat "$v" 5000 5 2>/dev/null) | sed "s/^/$r n3 - /" >> "$out"
  done
done
