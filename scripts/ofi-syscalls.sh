#!/bin/bash
# ofi-syscalls.sh: system calls per round trip of an 8-byte ping-pong between two network
# namespaces (the layout of skifch_testing::NetNodes, scripts/netns-nodes.sh), rank 0
# counted: mpi-lite over the hierarchy and the ofi driver (benches/c/mpi_loop.c pingpong),
# MPICH (ch4:ucx, UCX_TLS=tcp,self) and Open MPI (ob1, btl tcp) with the same program;
# IMPLS=raw: raw channels (msgrate's 8-byte latency test), counted per message rank 0 sent.
#
#   cargo build --release -p skifrun -p skifmpi
#   sudo scripts/ofi-syscalls.sh [OUTDIR]
# Two counts per implementation, both of rank 0 and all its threads:
# - perf stat on the syscalls:sys_enter_* tracepoints (no ptrace: the ranks run at their
#   own pace), runs of N and 2N iterations; the difference / N is per round trip, so
#   start-up and finalize cancel out. Prints the calls per round trip by kind, and the
#   context switches.
# - strace -f (futex left out), runs of N and 2N iterations (OUTDIR/IMPL.strace.{1,2}): per
#   round trip the calls by kind and result (EAGAIN, 0 events, data), from the difference.
# A poll that finds nothing is a system call on some paths, so how many happen per round
# trip depends on how long the reply takes (the load, and strace's own slowness): the
# tables split the calls that find something from those that do not.
# Environment: N (default 2000), STRACE=0 (perf only), DELAY_US (a ping-pong whose rank 1
# sleeps that long before each reply: rank 0's waits), IMPLS (default "lite mpich ompi"), LIB (directory of the
# libskifmpi.so to measure; default the release build), any SKIFCH_* variable is passed on.
set -u
cd "$(dirname "$0")/.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
lib=${LIB:-$rel}
n=${N:-2000}
out=${1:-$(mktemp -d /tmp/ofi-sys.XXXXXX)}
mkdir -p "$out"
. scripts/netns-nodes.sh
netns_nodes sks-$$ ofi-syscalls
netns_up || exit 2
# Rank 0 (hydra's PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK) under TOOL, the other as is.
cat >"$tmp/wrap" <<'EOS'
#!/bin/sh
f=$1; shift
r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
[ "$r" = 0 ] || exec "$@"
case $TOOL in
perf) exec perf stat -x, -o "$f" -e task-clock,context-switches,cpu-migrations -e 'syscalls:sys_enter_*' -- "$@" ;;
record) exec perf record -q ${REC_G:-} -o "$f" -e "${REC_EV:-syscalls:sys_enter_membarrier,syscalls:sys_enter_ppoll,syscalls:sys_exit_ppoll,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom}" -- "$@" ;;
strace) exec strace -f -qq -e 'trace=!futex' -o "$f" "$@" ;;
esac
EOS
chmod +x "$tmp/wrap"
cc_log=$out/compile.log
SKIFMPI_LIBDIR=$lib mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_loop.c -o "$tmp/loop_lite" 2>"$cc_log" || exit 1
mpicc.mpich -O2 benches/c/mpi_loop.c -o "$tmp/loop_mpich" 2>>"$cc_log" || exit 1
mpicc.openmpi -O2 benches/c/mpi_loop.c -o "$tmp/loop_ompi" 2>>"$cc_log" || exit 1
hosts="${nodes[0]}:1,${nodes[1]}:1"
: "${LIMIT:=300}"
hydra() { netns_hydra "$@"; }
ompi() { netns_ompi 10.10.0.0/24 -x TOOL "$@"; }
export SKIFCH_OFI_DOMAIN=eth0 UCX_TLS=tcp,self UCX_NET_DEVICES=eth0
# DELAY_US: rank 1 sleeps that long before each reply (mpi_loop pingdelay), so that rank 0
# waits longer than its spin (200 us over the fabric) and goes to sleep.
mode=pingpong
[ -n "${DELAY_US:-}" ] && mode=pingdelay && export MPI_LOOP_DELAY_US=$DELAY_US
run() { # run IMPL TOOL FILE ITERATIONS
    local impl=$1
    if [ "$impl" = raw ]; then # msgrate's latency test: its own number of round trips
        TOOL=$2 hydra -env TOOL "$2" "$tmp/wrap" "$3" "$rel/msgrate" --tests latency \
            --sizes 8 --csv "$3.csv"
    elif [ "$impl" = ompi ]; then
        TOOL=$2 ompi ${MPI_LOOP_DELAY_US:+-x MPI_LOOP_DELAY_US} "$tmp/wrap" "$3" "$tmp/loop_ompi" "$4" "$mode"
    else
        TOOL=$2 hydra -env LD_LIBRARY_PATH "$lib" -env TOOL "$2" "$tmp/wrap" "$3" \
            "$tmp/loop_$impl" "$4" "$mode"
    fi >"$3.out" 2>&1 || { echo "$impl ($2, $4): failed" >&2; tail -5 "$3.out" >&2; }
}
for impl in ${IMPLS:-lite mpich ompi}; do
    if [ "$impl" = raw ]; then # per message rank 0 sent (sendto), one run of each tool
        run raw perf "$out/raw.perf" 0
        [ "${STRACE:-1}" = 1 ] && run raw strace "$out/raw.strace" 0
        echo "== raw (per sendto)"
        python3 scripts/syscalls.py --per-send "$out/raw.perf" "$out/raw.strace"
        continue
    fi
    run "$impl" perf "$out/$impl.perf.1" "$n"
    run "$impl" perf "$out/$impl.perf.2" $((2 * n))
    if [ "${STRACE:-1}" = 1 ]; then
        run "$impl" strace "$out/$impl.strace.1" "$n"
        run "$impl" strace "$out/$impl.strace.2" $((2 * n))
    fi
    echo "== $impl"
    python3 scripts/syscalls.py "$n" "$out/$impl".{perf,strace}.{1,2}
done
