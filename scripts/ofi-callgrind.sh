#!/bin/bash
# ofi-callgrind.sh: instructions per 8-byte message of a ping-pong over the fabric between
# two network namespaces (the layout of skifch_testing::NetNodes and scripts/ofi-rates.sh),
# rank 0 under callgrind, rank 1 native: mpi-lite (benches/c/mpi_loop.c, mode pingdelay: rank
# 1 sleeps before each reply, so that rank 0's receives poll while the reply is not there, as
# in a native ping-pong) over the hierarchy and the ofi driver on the nodes' eth0. Counts are
# exact, whatever the load.
#
#   cargo build --release -p skifrun -p skifmpi
#   sudo scripts/ofi-callgrind.sh [OUTDIR]
# Prints MPI_Send's instructions per call, MPI_Recv's split into e (one empty poll) and s
# (everything else: the poll that finds the reply, the receive, the buffer's completion),
# and the inclusive counts per iteration and per call of the transport's functions; then the
# latency path alone (mode pingfirst: the reply is there at rank 0's first poll).
# LOCAL=1 instead: mpi_loop rate between the two ranks of node 0 in a 3-rank job (rank 2 on
# node 1), both under callgrind, against the same pair as a one-node job (no hierarchy):
# instructions per MPI_Send (rank 0) and per MPI_Recv (rank 1, its waiting polls included). Environment: N (default 2000), PROVIDER (SKIFCH_OFI_PROVIDER), LIB (the
# directory of the libskifmpi.so to measure; default the release build), MPICH=1 (also
# MPICH over ch4:ucx, UCX_TLS=tcp,self), RATE=1 (mpi_loop rate across the two nodes instead:
# instructions per MPI_Send of rank 0, per MPI_Recv of rank 1, each under callgrind in its
# own run), FIRST_ONLY=1 (only the latency path, by layer: scripts/cg-layers.py),
# OTHER_PREFIX (a command the ranks not under callgrind run under, e.g. "env
# SKIFCH_WAIT=block nice -n -19": a rank 1 that sleeps until the ping and then runs first
# replies before rank 0's first poll on a loaded machine), CG_OPTS (more valgrind options, e.g. "--collect-atstart=no
# --toggle-collect=PMPI_Send --toggle-collect=PMPI_Recv --dump-instr=yes" for a profile of the
# loop alone, per source line with callgrind_annotate), any SKIFCH_* variable is passed on.
set -u
cd "$(dirname "$0")/.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
lib=${LIB:-$rel}
n=${N:-2000}
out=${1:-$(mktemp -d /tmp/ofi-cg.XXXXXX)}
mkdir -p "$out"
. scripts/netns-nodes.sh
netns_nodes skc-$$ ofi-callgrind
netns_up || exit 2
# the ranks in CG_RANKS under callgrind (output file $1.RANK), the others as they are
cat >"$tmp/cg" <<'EOS'
#!/bin/sh
f=$1; shift
case " ${CG_RANKS:-0} " in *" ${PMI_RANK:-0} "*)
    exec valgrind --tool=callgrind ${CG_OPTS:-} --callgrind-out-file="$f.${PMI_RANK:-0}" "$@" 2>"$f.log" ;;
esac
exec ${OTHER_PREFIX:-} "$@"
EOS
chmod +x "$tmp/ssh" "$tmp/cg"
SKIFMPI_LIBDIR=$lib mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_loop.c -o "$tmp/loop_lite" || exit 1
: "${LIMIT:=900}"
hydra() { netns_hydra "$@"; }
# Both ranks spin (a rank waiting for the slow callgrind rank must not sleep: its wake-up
# would make rank 0 poll more).
export SKIFCH_OFI_DOMAIN=eth0 UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 SKIFCH_WAIT=${SKIFCH_WAIT:-spin}
[ -n "${PROVIDER:-}" ] && export SKIFCH_OFI_PROVIDER=$PROVIDER
impls=lite
if [ "${MPICH:-0}" = 1 ]; then
    mpicc.mpich -O2 benches/c/mpi_loop.c -o "$tmp/loop_mpich" || exit 1
    impls="lite mpich"
fi
if [ "${LOCAL:-0}" = 1 ]; then
    for job in "one-node ${nodes[0]}:2 2" "two-nodes ${nodes[0]}:2,${nodes[1]}:1 3"; do
        read -r name h np <<<"$job"
        hosts=$h np=$np hydra -env LD_LIBRARY_PATH "$lib" -env CG_RANKS "${CG_LOCAL:-0 1}" "$tmp/cg" \
            "$out/local.$name" "$tmp/loop_lite" "$n" rate >"$out/local.$name.out" 2>&1 ||
            { echo "local ($name): failed" >&2; tail -5 "$out/local.$name.out" >&2; }
        echo "$name: rank 0 $(python3 scripts/cg-calls.py "$out/local.$name.0" "$n" MPI_Send |
            head -1 | awk '{print "MPI_Send", $6}'), rank 1 $(python3 scripts/cg-calls.py \
            "$out/local.$name.1" "$n" MPI_Recv | head -1 | awk '{print "MPI_Recv", $6}')"
    done
    exit 0
fi
if [ "${RATE:-0}" = 1 ]; then
    # Streaming across the two nodes (batched): mpi_loop rate, rank 0 (the sender) under
    # callgrind in one run, rank 1 (the receiver) in the other, the other rank native.
    for r in 0 1; do
        hosts=${nodes[0]}:1,${nodes[1]}:1 np=2 hydra -env LD_LIBRARY_PATH "$lib" -env CG_RANKS $r \
            "$tmp/cg" "$out/rate" "$tmp/loop_lite" "$n" rate >"$out/rate.$r.out" 2>&1 ||
            { echo "rate (rank $r): failed" >&2; tail -5 "$out/rate.$r.out" >&2; }
    done
    echo "rate across the nodes: rank 0 $(python3 scripts/cg-calls.py "$out/rate.0" "$n" MPI_Send |
        head -1 | awk '{print "MPI_Send", $6}'), rank 1 $(python3 scripts/cg-calls.py \
        "$out/rate.1" "$n" MPI_Recv | head -1 | awk '{print "MPI_Recv", $6}')"
    exit 0
fi
# Per implementation: two runs of N iterations, rank 1 sleeping DELAY1 and DELAY2 us (default
# 200, 1000) before each reply. A receive costs s + (P - 1) e: P polls per receive, e an
# empty poll, s the rest; the runs' P differ, which gives e and s (scripts/cg-calls.py:
# calls and inclusive counts per function).
# mpi-lite's polls of the fabric: the node port's far half's turns (every receive's look
# after a fabric message, `shm::far`); mpi_loop's MPI_Iprobe reaches UCX's progress, not
# those turns (poll_off: calls an iteration that are not polls of the receive).
poll_fn() { [ "$1" = lite ] && echo 'RingPort<R>>::far_turn' || echo 'ucp_worker_progress'; }
poll_off() { [ "$1" = lite ] && echo 0 || echo 1; }
for impl in $impls; do
    for d in ${DELAY1:-200} ${DELAY2:-1000}; do
        [ "${FIRST_ONLY:-0}" = 1 ] && break
        hydra -env LD_LIBRARY_PATH "$lib" -env MPI_LOOP_DELAY_US $d "$tmp/cg" "$out/$impl.$d.x" \
            "$tmp/loop_$impl" "$n" pingdelay >"$out/$impl.$d.out" 2>&1 ||
            { echo "$impl ($d us): failed" >&2; tail -5 "$out/$impl.$d.out" >&2; }
        mv "$out/$impl.$d.x.0" "$out/$impl.$d"
    done
    [ "${FIRST_ONLY:-0}" = 1 ] || python3 scripts/cg-calls.py --solve "$n" "$(poll_fn $impl)" "$out/$impl.${DELAY1:-200}" \
        "$out/$impl.${DELAY2:-1000}" | sed "s/^/$impl: /"
    # The latency path alone: rank 0 sleeps after each send (mode pingfirst), so its receive
    # finds the reply at the first poll. Counted: MPI_Send and MPI_Recv without the waits a
    # late reply would cost (the sleep outlasts rank 1's reply but for a descheduled rank 1;
    # then the receive's hot polls before its wait show as more than 1 poll per receive).
    nf=${N_FIRST:-500}
    CG_OPTS="--collect-atstart=no --toggle-collect=PMPI_Send --toggle-collect=PMPI_Recv
        --toggle-collect=*wait_until_by* ${CG_OPTS:-}" hydra -env LD_LIBRARY_PATH "$lib" \
        -env MPI_LOOP_DELAY_US ${FIRST_DELAY:-20000} "$tmp/cg" "$out/$impl.first.x" \
        "$tmp/loop_$impl" "$nf" pingfirst >"$out/$impl.first.out" 2>&1 ||
        { echo "$impl (pingfirst): failed" >&2; tail -5 "$out/$impl.first.out" >&2; }
    mv "$out/$impl.first.x.0" "$out/$impl.first"
    total=$(sed -n 's/^totals: *//p; s/^summary: *//p' "$out/$impl.first" | head -1)
    # (calls are recorded outside the counted functions too: mpi_loop's MPI_Iprobe, one a
    # iteration, is not a poll of the receive)
    polls=$(python3 scripts/cg-calls.py "$out/$impl.first" "$nf" "$(poll_fn $impl)" | awk -v o="$(poll_off $impl)" '{print $4 - o; exit}')
    # A poll beyond the first is an empty one: its cost taken from the DELAY2 run (where
    # nearly every poll is empty) and subtracted.
    e=0
    [ "${FIRST_ONLY:-0}" = 1 ] ||
        e=$(python3 scripts/cg-calls.py "$out/$impl.${DELAY2:-1000}" "$n" "$(poll_fn $impl)" | awk '{print $6; exit}')
    awk -v i="$impl" -v t="$total" -v n="$nf" -v p="$polls" -v e="$e" 'BEGIN {
        printf "%s: latency path (reply there at the first poll): MPI_Send + MPI_Recv %.0f instructions (%.0f per iteration with %.2f polls per receive, less %.2f empty polls of %.0f)\n", i, t / n - (p - 1) * e, t / n, p, p - 1, e }'
    if [ "${FIRST_ONLY:-0}" = 1 ]; then
        python3 scripts/cg-layers.py "$out/$impl.first" "$nf" 0 | sed "s/^/$impl: /"
        continue
    fi
    echo "$impl, per iteration of the ${DELAY1:-200} us run (inclusive, calls):"
    python3 scripts/cg-calls.py "$out/$impl.${DELAY1:-200}" "$n" MPI_Send MPI_Recv 'Port>::send' \
        'Port>::ready' '::recv_into' 'Port>::complete' PortState::progress flush_others \
        ucp_tag_send_nbx uct_tcp_ep_am_short ucp_worker_progress | head -${TOP:-30}
done
