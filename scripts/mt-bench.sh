#!/usr/bin/env bash
# mt-bench.sh: the multi-threaded message rate of issue 17 (benches/c/mpi_mt.c: 2 ranks,
# MPI_THREAD_MULTIPLE, threads x pairs) over mpi-lite, Open MPI and MPICH in one run,
# interleaved: every round runs each library once per configuration, so the machine's load
# hits them alike. Prints the CSV lines (impl,test,size,value,unit,round,bind) on stdout and,
# on stderr, the median per (test, library) and the ratios of mpi-lite's medians to each peer's.
#
#   scripts/mt-bench.sh [OUT_DIR]      # OUT_DIR keeps the binaries, logs and all.csv
#
# Environment (defaults in brackets):
#   ROUNDS [5]   rounds        THREADS ["1 2"]  threads per rank   SIZE [8]  message bytes
#   TARGET_S [0.3] REPS [3]    per point (mpi_mt.c -t / -r)
#   TESTS [window,blocking]    mpi_mt.c -T (latency: the osu_latency_mt pattern)
#   BIND ["core"]              core: each library binds its ranks to a CPU each (mpi-lite's
#                              default, Open MPI --bind-to core, MPICH -bind-to core); none: no
#                              binding (SKIFMPI_BIND=none, --bind-to none, MPICH's default)
#   CARGO_TARGET_DIR           where mpi-lite's release library and skifrun are (target/)
# Peers: Debian's Open MPI (mpicc.openmpi, mpirun.openmpi --mca pml ob1 --mca btl vader,self)
# and MPICH (mpicc.mpich, mpiexec.mpich; its ch4:ucx on-node traffic with UCX_TLS=sm,self),
# as in ../shared/peers/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-$(mktemp -d /tmp/mt-bench.XXXXXX)}
mkdir -p "$out"
target=${CARGO_TARGET_DIR:-$root/target}
rounds=${ROUNDS:-5}
threads=${THREADS:-1 2}
size=${SIZE:-8}
tests=${TESTS:-window,blocking}
args="-m $size -t ${TARGET_S:-0.3} -r ${REPS:-3} -T $tests"
binds=${BIND:-core}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cargo build --release --quiet -p skifmpi -p skifrun
SKIFMPI_LIBDIR=$target/release mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_mt.c -lpthread -o "$out/mt.mpilite"
mpicc.openmpi -O2 benches/c/mpi_mt.c -lpthread -o "$out/mt.openmpi"
mpicc.mpich -O2 benches/c/mpi_mt.c -lpthread -o "$out/mt.mpich"

run() { # run IMPL BIND THREADS EXTRA...: one program run, its CSV lines tagged
    local impl=$1 bind=$2 n=$3
    shift 3
    local cmd
    case $impl in
    mpi-lite)
        cmd=(env SKIFMPI_BIND="$bind" "$target/release/skifrun" -n 2 "$out/mt.mpilite") ;;
    openmpi)
        cmd=(mpirun.openmpi -np 2 --bind-to "$bind" --map-by core --mca pml ob1
            --mca btl vader,self "$out/mt.openmpi") ;;
    mpich)
        local b=()
        [ "$bind" = core ] && b=(-bind-to core)
        cmd=(env UCX_TLS=sm,self mpiexec.mpich -np 2 "${b[@]}" "$out/mt.mpich") ;;
    esac
    timeout 300 "${cmd[@]}" -i "$impl" -n "$n" $args "$@" 2>>"$out/$impl.err" |
        awk -v r="$round" -v b="$bind" '/^[^#]/ && NF { print $0 "," r "," b }'
}

: >"$out/all.csv"
for round in $(seq 1 "$rounds"); do
    echo "round $round/$rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    for bind in $binds; do
        for n in $threads; do
            for impl in mpi-lite openmpi mpich; do
                run "$impl" "$bind" "$n" | tee -a "$out/all.csv"
                if [ "$n" -gt 1 ]; then
                    run "$impl" "$bind" "$n" -c shared | tee -a "$out/all.csv"
                fi
            done
        done
    done
done

python3 - "$out/all.csv" >&2 <<'EOF'
import csv, statistics, sys
vals = {}
for r in csv.reader(open(sys.argv[1])):
    if len(r) < 7: continue
    impl, test, size, v, unit, rnd, bind = r[:7]
    vals.setdefault((bind, test, int(size), unit), {}).setdefault(impl, []).append(float(v))
print("| bind | test | size | mpi-lite | Open MPI | MPICH | mpi-lite / Open MPI | mpi-lite / MPICH |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for (bind, test, size, unit), d in sorted(vals.items()):
    med = {k: statistics.median(v) for k, v in d.items()}
    f = (lambda x: f"{x/1e6:.2f}M" if unit == "msg/s" else f"{x:.2f} us")
    def ratio(p):
        if "mpi-lite" not in med or p not in med: return "-"
        # > 1: mpi-lite better (rates: ours/peer; latency: peer/ours)
        return f"{med['mpi-lite']/med[p]:.2f}" if unit == "msg/s" else f"{med[p]/med['mpi-lite']:.2f}"
    cells = [f(med[k]) if k in med else "-" for k in ("mpi-lite", "openmpi", "mpich")]
    n = min(len(v) for v in d.values())
    print(f"| {bind} | {test} | {size} | " + " | ".join(cells) + f" | {ratio('openmpi')} | {ratio('mpich')} |  (n={n})")
EOF
echo "CSV: $out/all.csv" >&2
