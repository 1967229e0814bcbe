#!/bin/bash
# run.sh OUT [ROUNDS]: 3 and 4 ranks on this host's 2 CPUs, the libraries of DIR/base and
# DIR/new alternated round by round (LD_LIBRARY_PATH): mpi-lite's barrier_lite
# (mpi_coll_small.c) and gasnet-shim's coll_lat; Open MPI (--oversubscribe) for reference.
# DIR [/tmp/cw]: the programs and DIR/{base,new}/lib*.so; REL: skifrun's directory.
dir=${DIR:-/tmp/cw}
rel=${REL:-/work/main/target/release}
out=$1
: > "$out"
for r in $(seq "${2:-3}"); do
  for n in 3 4; do
    for v in base new; do
      echo "$r $v n=$n lite $(LD_LIBRARY_PATH=$dir/$v timeout 120 "$rel/skifrun" -n $n -- "$dir/barrier_lite" 2000 2>/dev/null)" >> "$out"
      echo "$r $v n=$n gasnet $(cd "$dir" && LD_LIBRARY_PATH=$dir/$v timeout 120 "$rel/skifrun" -n $n -- ./coll_lat $v 2000 5 2>/dev/null | tr '\n' ' ')" >> "$out"
    done
    echo "$r ompi n=$n $(timeout 120 mpiexec.openmpi --oversubscribe --allow-run-as-root -n $n "$dir/barrier_ompi" 2000 2>/dev/null)" >> "$out"
  done
done
