#!/bin/bash
# perf-record.sh OUTDIR: perf record (cpu-clock) of rank 0 of benches/c/mpi_loop.c pingdelay
# between two network namespaces, mpi-lite then MPICH (IMPLS, N, DELAY_US, LIB as in
# scripts/ofi-syscalls.sh): where an empty poll's CPU goes.
set -u
cd "$(dirname "$0")/../.."
rel=$PWD/target/release; lib=${LIB:-$rel}; n=${N:-4000}
out=$1; mkdir -p "$out"
. scripts/netns-nodes.sh
netns_nodes skr-$$ rec
netns_up || exit 2
cat >"$tmp/wrap" <<'EOS'
#!/bin/sh
f=$1; shift
[ "${PMI_RANK:-0}" = 0 ] || exec "$@"
exec perf record -q -F 20000 -e cpu-clock -o "$f" -- "$@"
EOS
chmod +x "$tmp/wrap"
SKIFMPI_LIBDIR=$lib mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_loop.c -o "$tmp/loop_lite" 2>/dev/null || exit 1
mpicc.mpich -O2 benches/c/mpi_loop.c -o "$tmp/loop_mpich" 2>/dev/null || exit 1
hosts="${nodes[0]}:1,${nodes[1]}:1"
: "${LIMIT:=300}"
export SKIFCH_OFI_DOMAIN=eth0 UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 MPI_LOOP_DELAY_US=${DELAY_US:-50}
for impl in ${IMPLS:-lite mpich}; do
  netns_hydra -env LD_LIBRARY_PATH "$lib" "$tmp/wrap" "$out/$impl.data" "$tmp/loop_$impl" "$n" ${MODE:-pingdelay} > "$out/$impl.out" 2>&1 || tail -3 "$out/$impl.out"
done
