#!/bin/bash
# ofi-blocked.sh: CPU a rank uses while blocked in MPI_Recv across two network namespaces
# (the layout of skifch_testing::NetNodes, scripts/netns-nodes.sh) while its peer holds
# each reply HOLD ms: mpi-lite over the hierarchy and the ofi driver (`net`, eth0), and
# MPICH (ch4:ucx over tcp) for comparison, with mpi-lite/tests/c/blocked.c (rank 0's
# process CPU time, all threads, over each wait). Root only.
#
#   cargo build --release -p skifrun -p skifmpi
#   sudo scripts/ofi-blocked.sh
# Environment: HOLDS (ms, default "1 10 300 2000"), WAITS (total wall time per hold,
# default 3000 ms, at least 1 wait), IMPLS (default "lite mpich"), LIB (directory of the
# libskifmpi.so to measure; default the release build), any SKIFCH_* variable.
set -u
cd "$(dirname "$0")/.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
lib=${LIB:-$rel}
. scripts/netns-nodes.sh
netns_nodes skb-$$ ofi-blocked
netns_up || exit 2
prog=mpi-lite/tests/c/blocked.c
SKIFMPI_LIBDIR=$lib mpi-lite/bin/skif-mpicc -O2 -Impi-lite/tests/c "$prog" -o "$tmp/lite" || exit 1
mpicc.mpich -O2 -Impi-lite/tests/c "$prog" -o "$tmp/mpich" || exit 1
export SKIFCH_OFI_DOMAIN=eth0 UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 BLOCKED_MAX_PCT=100
uptime
for hold in ${HOLDS:-1 10 300 2000}; do
    waits=$(( ${WAITS:-3000} / hold )); [ "$waits" -ge 1 ] || waits=1
    for impl in ${IMPLS:-lite mpich}; do
        printf '%-6s hold %5s ms x %4s: ' "$impl" "$hold" "$waits"
        LIMIT=300 netns_hydra -env LD_LIBRARY_PATH "$lib" -env BLOCKED_MS "$hold" -env BLOCKED_WAITS "$waits" \
            "$tmp/$impl" 2>&1 | grep -E 'blocked|rror' || echo failed
    done
done
uptime
