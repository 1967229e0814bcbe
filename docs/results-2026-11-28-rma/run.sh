#!/usr/bin/env bash
# run.sh: benches/c/mpi_rma.c over mpi-lite and every peer in one run, ROUNDS rounds (order
# reversed every other round), in both measuring modes: the default (median of 5 passes of
# >= 20 ms) and -s best (the fastest of 201 passes of >= 0.5 ms). One CSV per round and mode
# in OUT (default: this directory), the load average before each program on stderr.
#   ROUNDS=2 docs/results-2026-11-28-rma/run.sh     (from the workspace root, after
#   cargo build --release --bin skifrun -p skifmpi)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rel=${CARGO_TARGET_DIR:-$root/target}/release
out=${OUT:-$root/docs/results-2026-11-28-rma}
rounds=${ROUNDS:-2}
tmp=$(mktemp -d /tmp/rma-run.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
SKIFMPI_LIBDIR=$rel "$root/mpi-lite/bin/skif-mpicc" -O2 benches/c/mpi_rma.c -o "$tmp/lite"
mpicc.openmpi -O2 -Ibenches/c benches/c/mpi_rma.c -o "$tmp/ompi"
mpicc.mpich -O2 -Ibenches/c benches/c/mpi_rma.c -o "$tmp/mpich"
ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe -np 2)
run() { # run IMPL MODE...: one program, its rows on stdout
    local impl=$1
    shift
    echo "$(date -u +%H:%M:%S) $impl $* load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    case $impl in
    mpi-lite) "$rel/skifrun" -n 2 "$tmp/lite" -i "$impl" "$@" ;;
    openmpi) timeout 600 "${ompi[@]}" "$tmp/ompi" -i "$impl" "$@" 2>/dev/null || true ;;
    openmpi-osc-sm) timeout 600 "${ompi[@]}" --mca osc sm,pt2pt "$tmp/ompi" -i "$impl" "$@" 2>/dev/null || true ;;
    openmpi-osc-ucx) timeout 600 "${ompi[@]}" --mca osc ucx -x UCX_TLS=sm,self "$tmp/ompi" -i "$impl" "$@" 2>/dev/null || true ;;
    mpich) timeout 900 mpirun.mpich -np 2 "$tmp/mpich" -i "$impl" "$@" 2>/dev/null || true ;;
    esac
}
impls=(mpi-lite openmpi-osc-sm openmpi openmpi-osc-ucx mpich)
for ((r = 1; r <= rounds; r++)); do
    order=("${impls[@]}")
    if ((r % 2 == 0)); then
        order=()
        for ((i = ${#impls[@]} - 1; i >= 0; i--)); do order+=("${impls[i]}"); done
    fi
    for mode in best median; do
        args=()
        [ "$mode" = best ] && args=(-s best)
        f=$out/$mode-r$r.csv
        echo "impl,test,size,value,unit" >"$f"
        for impl in "${order[@]}"; do run "$impl" "${args[@]}" >>"$f"; done
    done
done
