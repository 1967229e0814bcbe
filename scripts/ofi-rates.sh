#!/bin/bash
# ofi-rates.sh: 8 B message rate, 8 B latency and 1 MiB bandwidth between two "nodes" —
# network namespaces joined by veth pairs to a bridge, the layout of
# skifch_testing::NetNodes — for raw SkifCh channels (the ofi driver on the nodes' eth0,
# with the provider it picks by itself: `net` on Debian's libfabric 1.17), mpi-lite over the
# same driver, Open MPI (`--mca pml ob1 --mca btl tcp,self`, `--bind-to none`) and MPICH
# (Debian's is `ch4:ucx`: `UCX_TLS=tcp,self`), in one run: ROUNDS rounds, each running
# every implementation once, so that the ratios compare runs made minutes apart.
#
#   cargo build --release -p skifrun -p skifmpi && cargo build --release -p skifch-benches --bin msgrate
#   (two commands: with `--bin msgrate` in the same command cargo builds no library, and a
#   stale libskifmpi.so from an older build would be measured; the script refuses programs
#   older than the sources, STALE_OK=1 overrides)
#   sudo scripts/ofi-rates.sh [OUTDIR]       # needs root (ip netns), mpiexec.hydra,
#                                            # mpicc.mpich, mpicc.openmpi, mpirun.openmpi
# Environment: ROUNDS (default 3), CARGO_TARGET_DIR (where the release build is),
# LO=1 (instead of namespaces: both ranks in one namespace over its loopback interface),
# PROVIDER (the ofi driver's provider, e.g. 'tcp;ofi_rxm'; default: the driver's choice),
# RXM=1 (also raw channels over 'tcp;ofi_rxm', column raw-rxm), BIND=0 (mpi-lite unbound
# as the others, instead of its default CPU binding), SHMEM=1 (also the peers'
# msgrate_shmem.c over skifshmem, columns shmem-transfers (SKIFSHMEM_RMA=transfers: FI_RMA)
# and shmem-messages (its default there); needs `cargo build --release -p shmem`), RMA=1
# (also MPI one-sided, benches/c/mpi_rma.c -l: 8 B put/get/accumulate latencies, put rate
# and a lock-put-unlock epoch on an MPI_Win_allocate window, for mpi-lite by messages (its
# default over these providers, column mpi-lite) and by transfers (SKIFMPI_RMA=transfers,
# column lite-transfers: puts and gets by FI_RMA), Open MPI and MPICH).
# LITE_ALT=DIR (also mpi-lite with the libskifmpi.so of DIR, e.g. a copy of main's before a
# change: column mpi-lite-alt, the same programs through LD_LIBRARY_PATH, in the same round),
# TESTS (default msgrate,latency,bandwidth: which of the three to run; `latency,bandwidth`
# makes short rounds for alternating comparisons).
# Open MPI runs with --bind-to none: each node's orted binds its one rank to core 0, so
# the two ranks shared one CPU and took turns at the 4 ms scheduler tick (4 ms latency);
# and with --mca osc pt2pt: over ob1/tcp no other one-sided component works
# (MPI_Win_allocate fails with MPI_ERR_WIN).
# Output: OUTDIR/all.csv (impl,test,size,value,unit,round), the load average before each
# round in OUTDIR/load.txt, and on stdout a table of the medians over the rounds with the
# ratio to the best MPI (for latency: best MPI / ours, so above 1 is better too).
set -u
cd "$(dirname "$0")/.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
rounds=${ROUNDS:-3}
out=${1:-$(mktemp -d /tmp/ofi-rates.XXXXXX)}
mkdir -p "$out"
. scripts/netns-nodes.sh
netns_nodes skr-$$ ofi-rates

for t in mpiexec.hydra mpicc.mpich mpicc.openmpi mpirun.openmpi; do
    command -v $t >/dev/null || { echo "ofi-rates: $t is not on PATH" >&2; exit 2; }
done
for f in "$rel/msgrate" "$rel/libskifmpi.so"; do
    [ -e "$f" ] || { echo "ofi-rates: $f missing (build first, see the header)" >&2; exit 2; }
    # A source newer than the program: it was not rebuilt (see the header).
    newer=$(find skifch/src skifch-drivers/src mpi-lite/src mpi-lite/capi/src benches/src \
        -name '*.rs' -newer "$f" -print -quit)
    if [ -n "$newer" ] && [ "${STALE_OK:-0}" != 1 ]; then
        echo "ofi-rates: $f is older than $newer: rebuild (see the header) or STALE_OK=1" >&2
        exit 2
    fi
done

# The nodes: as NetNodes::build (10.10.0.<i+1> on each node's eth0, the bridge in "sw").
netns_up || exit 2

if [ "${LO:-0}" = 1 ]; then
    hosts="${nodes[0]}:2" iface=lo ompi_if=127.0.0.1/32
else
    hosts="${nodes[0]}:1,${nodes[1]}:1" iface=eth0 ompi_if=10.10.0.0/24
fi

# The programs: the peers' msgrate_mpi.c and mpi_bw.c for each MPI.
peers=/work/shared/peers/msgrate_mpi.c
[ -e "$peers" ] || peers=../shared/peers/msgrate_mpi.c
SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 "$peers" -o "$tmp/mr_lite" -lm || exit 1
SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_bw.c -o "$tmp/bw_lite" -lm || exit 1
mpicc.mpich -O2 "$peers" -o "$tmp/mr_mpich" -lm || exit 1
mpicc.mpich -O2 benches/c/mpi_bw.c -o "$tmp/bw_mpich" -lm || exit 1
mpicc.openmpi -O2 "$peers" -o "$tmp/mr_ompi" -lm || exit 1
mpicc.openmpi -O2 benches/c/mpi_bw.c -o "$tmp/bw_ompi" -lm || exit 1
if [ "${RMA:-0}" = 1 ]; then
    SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_rma.c -o "$tmp/rma_lite" || exit 1
    mpicc.mpich -O2 benches/c/mpi_rma.c -o "$tmp/rma_mpich" || exit 1
    mpicc.openmpi -O2 benches/c/mpi_rma.c -o "$tmp/rma_ompi" || exit 1
fi
if [ "${SHMEM:-0}" = 1 ]; then
    SKIFSHMEM_LIBDIR=$rel shmem/bin/skif-oshcc -O2 "${peers%/*}/msgrate_shmem.c" \
        -o "$tmp/mr_shmem" -lm || exit 1
fi

# hydra in the switch namespace, one rank per node (both on node 0 with LO=1)
hydra() { netns_hydra "$@"; }
ompi() { netns_ompi "$ompi_if" --mca osc pt2pt "$@"; }
# SkifCh: the ofi driver between the nodes (the hierarchy routes there: one rank a node;
# with LO=1 SKIFCH_DRIVER=ofi forces it between the two ranks of one node).
export SKIFCH_OFI_DOMAIN=$iface
[ -n "${PROVIDER:-}" ] && export SKIFCH_OFI_PROVIDER=$PROVIDER
[ "${LO:-0}" = 1 ] && export SKIFCH_DRIVER=ofi
export UCX_TLS=tcp,self UCX_NET_DEVICES=$iface
# mpi-lite binds by default, the k-th rank on this machine to its k-th CPU: the two
# namespaces share one kernel, so their ranks take CPUs 0 and 1 (skifch_drivers::place).
# The others run unbound (Open MPI with --bind-to none, hydra and the raw benchmark bind
# nothing; binding by the node's rank as they do would put both on CPU 0). BIND=0: mpi-lite
# unbound too.
[ "${BIND:-1}" = 1 ] || export SKIFMPI_BIND=none

tests=,${TESTS:-msgrate,latency,bandwidth},
has() { [[ $tests == *,$1,* ]]; }
mr_tests=$(has msgrate && echo msgrate,)$(has latency && echo latency)
mr_tests=${mr_tests%,}
lite_runs=lite:hydra
[ -n "${LITE_ALT:-}" ] && lite_runs="lite:hydra lite-alt:hydra"

csv=$out/all.csv
: >"$csv"
: >"$out/load.txt"
for r in $(seq 1 "$rounds"); do
    echo "round $r: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt" >&2
    # Raw channels: bandwidth is msgrate's at 1 MiB; the 8 B points as asked.
    raw_tests=$( (has msgrate || has bandwidth) && echo msgrate,)$(has latency && echo latency)
    raw_sizes=$( (has msgrate || has latency) && echo 8,)$(has bandwidth && echo 1048576)
    hydra "$rel/msgrate" --tests "${raw_tests%,}" --sizes "${raw_sizes%,}" --csv "$tmp/raw.csv" \
        >"$tmp/raw.log" 2>&1 || { echo "raw channels failed:" >&2; tail -5 "$tmp/raw.log" >&2; }
    grep -v '^#\|^impl' "$tmp/raw.csv" 2>/dev/null | cut -d, -f1-5 | sed "s/\$/,$r/" >>"$csv"
    if [ "${RXM:-0}" = 1 ]; then # the same over tcp;ofi_rxm, as column raw-rxm
        hydra -env SKIFCH_OFI_PROVIDER 'tcp;ofi_rxm' "$rel/msgrate" --tests msgrate,latency \
            --sizes 8,1048576 --csv "$tmp/rxm.csv" >"$tmp/rxm.log" 2>&1 ||
            { echo "raw channels over rxm failed:" >&2; tail -5 "$tmp/rxm.log" >&2; }
        grep -v '^#\|^impl' "$tmp/rxm.csv" 2>/dev/null | cut -d, -f2-5 |
            sed "s/^/raw-rxm,/; s/\$/,$r/" >>"$csv"
    fi
    if [ "${SHMEM:-0}" = 1 ]; then # skifshmem by FI_RMA and by messages
        for v in transfers messages; do
            hydra -env SKIFSHMEM_RMA "$v" "$tmp/mr_shmem" -i "shmem-$v" \
                -T put_rate,put_quiet_lat,latency -m 8 2>"$tmp/shmem.err" |
                grep -v '^impl' | sed "s/\$/,$r/" >>"$csv" ||
                { echo "shmem ($v) failed:" >&2; tail -5 "$tmp/shmem.err" >&2; }
        done
    fi
    if [ "${RMA:-0}" = 1 ]; then # MPI one-sided: mpi-lite both ways, then the MPIs
        for m in lite:hydra:mpi-lite:messages lite:hydra:lite-transfers:transfers \
            mpich:hydra:mpich: ompi:ompi:openmpi:; do
            IFS=: read -r impl run name path <<<"$m"
            # (120 s each: Open MPI's osc pt2pt hung in one of three runs here)
            (export SKIFMPI_RMA=$path LIMIT=120; $run "$tmp/rma_$impl" -i "$name" -l -r 3) \
                2>"$tmp/rma.err" | grep -v '^impl' | sed "s/\$/,$r/" >>"$csv" ||
                { echo "$name one-sided failed:" >&2; tail -5 "$tmp/rma.err" >&2; }
        done
    fi
    for m in $lite_runs mpich:hydra ompi:ompi; do
        impl=${m%%:*} run=${m##*:} env=()
        name=$impl; [ $impl = lite ] && name=mpi-lite; [ $impl = ompi ] && name=openmpi
        if [ $impl = lite-alt ]; then # the other library under the same programs
            impl=lite name=mpi-lite-alt env=(-env LD_LIBRARY_PATH "$LITE_ALT")
        fi
        if [ -n "$mr_tests" ]; then
            $run "${env[@]}" "$tmp/mr_$impl" -i "$name" -T "$mr_tests" -m 8 \
                2>"$tmp/$impl.err" | grep -v '^impl' | sed "s/\$/,$r/" >>"$csv" ||
                { echo "$name msgrate failed:" >&2; tail -5 "$tmp/$impl.err" >&2; }
        fi
        if has bandwidth; then
            $run "${env[@]}" "$tmp/bw_$impl" -i "$name" -m 1048576 2>"$tmp/$impl.bw.err" |
                grep -v '^impl' | sed "s/\$/,$r/" >>"$csv" ||
                { echo "$name bandwidth failed:" >&2; tail -5 "$tmp/$impl.bw.err" >&2; }
        fi
    done
done
echo "CSV: $csv" >&2
# Medians over the rounds per (impl, test, size), and each one's ratio to the best MPI's.
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = {}
for impl, test, size, value, unit, rnd in csv.reader(open(sys.argv[1])):
    impl = "skifch-raw" if impl.startswith("skifch") else impl
    rows.setdefault((test, int(size), unit), {}).setdefault(impl, []).append(float(value))
cols = ["skifch-raw"] + (["raw-rxm"] if any("raw-rxm" in by for by in rows.values()) else [])
cols += ["mpi-lite"] + (["mpi-lite-alt"] if any("mpi-lite-alt" in by for by in rows.values()) else [])
cols += ["openmpi", "mpich"]
cols += [c for c in ("shmem-transfers", "shmem-messages", "lite-transfers")
         if any(c in by for by in rows.values())]
# Medians, then each implementation's best round (on a shared machine the closest to its
# quiet-machine figure: load only ever slows a run down).
for label, pick in (("median", statistics.median), ("best round", None)):
  print("\n%s of the rounds:\n" % label)
  print("| test | size | unit | " + " | ".join(cols) + " | raw / best MPI | mpi-lite / best MPI |")
  print("| --- | ---: | --- |" + " ---: |" * (len(cols) + 2))
  for (test, size, unit), by in sorted(rows.items()):
    lower = unit == "us"  # latency: lower is better
    best_of = (min if lower else max) if pick is None else pick
    med = {k: best_of(v) for k, v in by.items()}
    mpis = [med[m] for m in ("openmpi", "mpich") if m in med]
    best = (min(mpis) if lower else max(mpis)) if mpis else None
    def ratio(k):
        if k not in med or not best:
            return "-"
        return "%.2f" % ((best / med[k]) if lower else (med[k] / best))
    cells = ["%g" % med[k] if k in med else "-" for k in cols]
    print("| %s | %d | %s | %s | %s | %s |" % (test, size, unit, " | ".join(cells), ratio("skifch-raw"), ratio("mpi-lite")))
PY
