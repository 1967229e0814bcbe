#!/usr/bin/env bash
# armci-bench.sh: armci-shim against ARMCI over MPI in one run (issue 19, "Speed"): the
# same program, benches/c/armci_bench.c, built three times -- with armci-shim/bin/skif-armcicc
# (impl armci-shim, run under skifrun), and against Debian's ARMCI-MPI (libarmci-mpi-dev)
# with mpicc.openmpi -larmci-openmpi and mpicc.mpich -larmci-mpich (impls armci-mpi-openmpi,
# armci-mpi-mpich, run with the launcher options ../shared/peers/run.sh uses for Open MPI and
# MPICH; armci-mpi-openmpi-sm is the Open MPI one with --mca osc sm,pt2pt) -- then ROUNDS
# rounds of all, the order reversed every other round (the peers
# README's "Noise": compare within one run, interleaved). Output: the medians over the rounds
# and the same-run gains, as `msgrate --table-from` prints them (lines "armci-shim vs best
# ARMCI-MPI" and "armci-shim vs memcpy"; above 1 = armci-shim better), on stdout; per round
# CSVs, logs, the merged CSV ($OUT/armci.csv) and plot in $OUT; on stderr per run its time
# and the load average.
#
#   scripts/armci-bench.sh                       # build (release), 3 rounds: ~1-2 minutes
#   ROUNDS=5 TARGET_S=0.5 scripts/armci-bench.sh
#
# Environment (defaults in brackets):
#   ROUNDS [3]  TARGET_S [0.3]  REPS [5]  STAT [median]   armci_bench.c's -t -r -s per run
#   MAX_SIZE    its -m (the largest size; the first of each kind always runs)
#   ARGS        more options of armci_bench.c (e.g. -W: the target waits outside ARMCI)
#   ONLY ["armci-shim armci-mpi-openmpi armci-mpi-openmpi-sm armci-mpi-mpich"]  which ones
#   OUT [$CARGO_TARGET_DIR/release/armci-bench]            builds, CSVs, logs
#   NO_BUILD=1  use the libraries, skifrun and msgrate already built
# Needs: libarmci-mpi-dev, openmpi-bin libopenmpi-dev, mpich
# libmpich-dev (`apt-get install -y libarmci-mpi-dev openmpi-bin libopenmpi-dev mpich`).
# Exit status: 0, or 1 if a build or any run failed (the other runs are still tabulated).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
rel=$target/release
out=${OUT:-$rel/armci-bench}
rounds=${ROUNDS:-3}
only=${ONLY:-armci-shim armci-mpi-openmpi armci-mpi-openmpi-sm armci-mpi-mpich}
args=(-t "${TARGET_S:-0.3}" -r "${REPS:-5}" -s "${STAT:-median}")
[ -z "${MAX_SIZE:-}" ] || args+=(-m "$MAX_SIZE")
# shellcheck disable=SC2206 # (words on purpose)
[ -z "${ARGS:-}" ] || args+=($ARGS)
note() { echo "# $*" >&2; }

if [ -z "${NO_BUILD:-}" ]; then
    # (two commands: with --bin, cargo builds the other packages' libraries only as
    # dependencies, and libarmci.so is nobody's)
    cargo build --release --quiet -p armci-shim -p skifrun
    cargo build --release --quiet -p skifch-benches --bin msgrate
fi
mkdir -p "$out"
src=benches/c/armci_bench.c
failed=0
build() { # build IMPL COMPILER... : $out/armci_bench.IMPL, compiler output in its log
    local impl=$1
    shift
    if ! "$@" >"$out/build-$impl.log" 2>&1; then
        note "building for $impl failed:"
        cat "$out/build-$impl.log" >&2
        note "(ARMCI-MPI: apt-get install -y libarmci-mpi-dev; Open MPI / MPICH as in the header)"
        failed=1
        only=$(echo "$only" | tr ' ' '\n' | grep -vx "$impl" | tr '\n' ' ')
    fi
}
for impl in $only; do
    exe=$out/armci_bench.$impl
    case $impl in
        armci-shim) build "$impl" env ARMCI_SHIM_LIBDIR="$rel" armci-shim/bin/skif-armcicc -O2 -Wall "$src" -o "$exe" ;;
        armci-mpi-openmpi | armci-mpi-openmpi-sm)
            build "$impl" mpicc.openmpi -O2 -Wall "$src" -o "$exe" -larmci-openmpi ;;
        armci-mpi-mpich) build "$impl" mpicc.mpich -O2 -Wall "$src" -o "$exe" -larmci-mpich ;;
        *) note "unknown impl $impl (ONLY: armci-shim armci-mpi-openmpi armci-mpi-openmpi-sm armci-mpi-mpich)"; exit 2 ;;
    esac
done

# Bound as run.sh binds the peers (rank r on CPU r); armci_bench.c pins itself likewise
# under skifrun.
if [ "$(nproc)" -ge 2 ]; then
    ompi_bind=(--bind-to core --map-by core)
    mpich_bind=(-bind-to core)
else
    ompi_bind=(--oversubscribe --bind-to none)
    mpich_bind=()
fi
run() { # run IMPL ROUND: one run of the program, its CSV lines appended to the round's file
    local impl=$1 r=$2 exe=$out/armci_bench.$1
    local log=$out/r$r-$impl.log t0=$SECONDS
    local cmd
    case $impl in
        armci-shim) cmd=("$rel/skifrun" -n 2 -- "$exe") ;;
        armci-mpi-openmpi*)
            # -sm: Open MPI's shared-memory one-sided component, which it does not pick
            # itself for ARMCI-MPI's windows but which is the faster one on one node
            local osc=()
            [ "$impl" = armci-mpi-openmpi ] || osc=(--mca osc sm,pt2pt)
            cmd=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi -np 2
                "${ompi_bind[@]}" --mca pml ob1 --mca btl vader,self "${osc[@]}" "$exe") ;;
        armci-mpi-mpich)
            # as run.sh: MPICH's on-node traffic goes through UCX, on its shm transports
            cmd=(env UCX_TLS=sm,self mpirun.mpich -np 2 "${mpich_bind[@]}" "$exe") ;;
    esac
    if timeout --kill-after=10 900 "${cmd[@]}" -i "$impl" "${args[@]}" \
        >"$out/r$r-$impl.csv" 2>"$log"; then
        grep -v '^#' "$out/r$r-$impl.csv" >>"$out/round-$r.csv"
        note "round $r: $impl: $(wc -l <"$out/r$r-$impl.csv") points in $((SECONDS - t0)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    else
        note "round $r: $impl FAILED (see $log):"
        tail -5 "$log" >&2
        failed=1
    fi
}

note "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
files=()
for r in $(seq 1 "$rounds"); do
    echo "impl,test,size,value,unit" >"$out/round-$r.csv"
    order=$only
    if [ $((r % 2)) -eq 0 ]; then
        order=$(echo "$only" | tr ' ' '\n' | grep . | tac | tr '\n' ' ')
    fi
    for impl in $order; do
        run "$impl" "$r"
    done
    files+=("$out/round-$r.csv")
done
note "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$rel/msgrate" --table-from "${files[@]}" --csv "$out/armci.csv" --svg "$out/armci.svg" |
    grep -E '^(comparison|armci-shim)|^CSV'
exit "$failed"
