#!/usr/bin/env bash
# run-gated.sh -- same-run message rates of mpi-lite (this tree, and optionally an older
# libskifmpi.so), Open MPI (ob1/vader, --bind-to core) and MPICH (ch4:ucx, UCX_TLS=sm,self),
# every point gated on the near vCPU placement (`-g 0.1:60:0.04`, ../shared/peers/README.md
# "Noise"), interleaved rounds. CSV on stdout: round,impl,test,size,value,unit.
#
#   docs/results-2026-11-29-window/run-gated.sh [ROUNDS] > rates.csv 2> rates.log
#   OLD_LIB=/dir/with/old/libskifmpi.so ...   # adds a "lite-old" row (same program, that library)
set -uo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
peers=${PEERS:-/work/shared/peers}
b=$(mktemp -d /tmp/window-gated.XXXXXX)
trap 'rm -rf "$b"' EXIT
SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 -I"$peers" "$peers/msgrate_mpi.c" -o "$b/mr.lite"
mpicc.openmpi -O2 -I"$peers" "$peers/msgrate_mpi.c" -o "$b/mr.ompi"
mpicc.mpich -O2 -I"$peers" "$peers/msgrate_mpi.c" -o "$b/mr.mpich"
MR="-T msgrate_window,msgrate -m 64 -t 0.2 -r 5 -g 0.1:60:0.04"
for r in $(seq 1 "$rounds"); do
    if [ -n "${OLD_LIB:-}" ]; then
        LD_LIBRARY_PATH=$OLD_LIB "$rel/skifrun" -n 2 -- "$b/mr.lite" -i lite-old $MR | grep -v impl | sed "s/^/$r,/"
    fi
    "$rel/skifrun" -n 2 -- "$b/mr.lite" -i lite-new $MR | grep -v impl | sed "s/^/$r,/"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi -np 2 --bind-to core \
        --map-by core --mca pml ob1 --mca btl vader,self "$b/mr.ompi" -i openmpi $MR |
        grep -v impl | sed "s/^/$r,/"
    UCX_TLS=sm,self mpiexec.mpich -np 2 -bind-to core "$b/mr.mpich" -i mpich $MR |
        grep -v impl | sed "s/^/$r,/"
done
