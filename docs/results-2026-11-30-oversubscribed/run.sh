#!/bin/bash
# run.sh OUT [ROUNDS]: 3 and 4 ranks on this host's CPUs, alternated round by round:
# mpi-lite (mpi_coll_small.c via skif-mpicc) and gasnet-shim (coll_lat.c of
# ../results-2026-11-30-nb-collectives, skifch-seq.mak) with the waits yielding (the
# default when the machine runs more ranks than CPUs) and with SKIFCH_OVERSUBSCRIBED=0 (the
# waits as before: spin, then sleep); Open MPI (--oversubscribe) and MPICH (hydra) for
# reference. DIR [/tmp/s44]: the built programs (barrier_lite, barrier_ompi,
# barrier_mpich, coll_lat); REL: the release directory. Run from the repository's top.
dir=${DIR:-/tmp/s44}
rel=${REL:-$PWD/target/release}
out=$1
: > "$out"
for r in $(seq "${2:-3}"); do
  for n in 3 4; do
    for v in 1 0; do
      echo "$r lite crowded=$v $("$rel/skifrun" -n $n -x SKIFCH_OVERSUBSCRIBED=$v -- "$dir/barrier_lite" 2000 2>/dev/null)" >> "$out"
      echo "$r gasnet crowded=$v n=$n $(cd "$dir" && "$rel/skifrun" -n $n -x SKIFCH_OVERSUBSCRIBED=$v -- ./coll_lat c$v 2000 5 2>/dev/null | tr '\n' ' ')" >> "$out"
    done
    echo "$r ompi $(timeout 120 mpiexec.openmpi --oversubscribe --allow-run-as-root -n $n "$dir/barrier_ompi" 2000 2>/dev/null)" >> "$out"
    echo "$r mpich $(timeout 120 mpiexec.mpich -n $n "$dir/barrier_mpich" 100 2>/dev/null)" >> "$out"
  done
done
