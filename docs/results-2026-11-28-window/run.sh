#!/usr/bin/env bash
# run.sh -- same-run message rates and small-collective latencies: mpi-lite against Debian's
# Open MPI (pml ob1, btl vader,self, --bind-to core) and MPICH, interleaved rounds, medians.
#
#   docs/results-2026-11-28-window/run.sh [ROUNDS] > rates.csv    (workspace root; default 5)
#
# Builds the peers' unmodified msgrate_mpi.c (../shared/peers) and benches/c/mpi_coll.c with
# skif-mpicc (the release libraries of $CARGO_TARGET_DIR or target/), mpicc.openmpi and
# mpicc.mpich; each round runs every program once per library, in the same order. Output:
# CSV round,impl,test,size,value,unit (msg/s or us). Summarise with summarise.py.
# MPICH: Debian's is ch4:ucx, UCX_TLS=sm,self as the peers' run.sh sets it.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rounds=${1:-5}
rel=${CARGO_TARGET_DIR:-$root/target}/release
peers=${PEERS:-/work/shared/peers}
b=$(mktemp -d /tmp/window-rates.XXXXXX)
trap 'rm -rf "$b"' EXIT
SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 -I"$peers" "$peers/msgrate_mpi.c" -o "$b/mr.lite"
mpicc.openmpi -O2 -I"$peers" "$peers/msgrate_mpi.c" -o "$b/mr.ompi"
mpicc.mpich -O2 -I"$peers" "$peers/msgrate_mpi.c" -o "$b/mr.mpich"
SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_coll.c -o "$b/co.lite"
mpicc.openmpi -O2 benches/c/mpi_coll.c -o "$b/co.ompi"
mpicc.mpich -O2 benches/c/mpi_coll.c -o "$b/co.mpich"
MR="-T msgrate,msgrate_window -m 64 -t 0.3 -r 5"
CO="-t 0.3 -r 5"
ompi() { OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi -np 2 --bind-to core --map-by core --mca pml ob1 --mca btl vader,self "$@"; }
mpich() { UCX_TLS=sm,self mpiexec.mpich -np 2 -bind-to core "$@"; }
lite() { "$rel/skifrun" -n 2 -- "$@"; }
echo "round,impl,test,size,value,unit"
for r in $(seq 1 "$rounds"); do
    for what in mr co; do
        args=$MR; [ $what = co ] && args=$CO
        lite "$b/$what.lite" -i mpi-lite $args 2>/dev/null | sed "s/^/$r,/"
        ompi "$b/$what.ompi" -i openmpi $args 2>/dev/null | sed "s/^/$r,/"
        mpich "$b/$what.mpich" -i mpich $args 2>/dev/null | sed "s/^/$r,/"
    done
done | grep -v ',impl,'
