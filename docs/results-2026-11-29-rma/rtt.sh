#!/usr/bin/env bash
# rtt.sh: the message-path target's reference in one sitting, ROUNDS times (default 3):
# a proto active-message round trip by the same rule as mpi_rma's -s best — the fastest of
# many short passes (benches/examples/proto_pp am N P: P passes of N round trips; shm
# 200 x 200, fpga-model 20 x 20) — then mpi_rma.c -l -s best on the message path, over
# shm (SKIFMPI_RMA=messages) and over --driver fpga-model.
# Prints "round,driver,test,value" lines (us; put_rate msg/s); load averages on stderr.
#   cargo build --release -p skifrun -p skifmpi -p skifch-benches --example proto_pp
#   docs/results-2026-11-29-rma/rtt.sh > docs/results-2026-11-29-rma/rtt.csv
set -euo pipefail
cd "$(dirname "$0")/../.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
tmp=$(mktemp -d /tmp/rma-rtt.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_rma.c -o "$tmp/lite"
echo "round,driver,test,value"
for ((r = 1; r <= ${ROUNDS:-3}; r++)); do
    for d in shm:200 fpga-model:20; do
        IFS=: read -r drv n <<<"$d"
        echo "$(date -u +%H:%M:%S) $drv load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
        h=$(timeout 600 "$rel/skifrun" -n 2 --driver "$drv" "$rel/examples/proto_pp" am "$n" "$n" |
            sed -n 's/.*half-rtt \([0-9.]*\) us.*/\1/p')
        if [ -n "$h" ]; then echo "$r,$drv,proto_rtt,$(echo "$h * 2" | bc -l)"; fi
        SKIFMPI_RMA=messages timeout 900 "$rel/skifrun" -n 2 --driver "$drv" "$tmp/lite" -i "$drv" -l -s best |
            awk -F, -v d="$drv" -v r="$r" '{print r "," d "," $2 "," $4}'
    done
done
