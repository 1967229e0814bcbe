#!/usr/bin/env bash
# msgpath.sh: issue 18's message-path target and the asynchronous progress option's cost.
# ROUNDS rounds (default 3) of, in one run:
#   * a proto active-message round trip (benches/examples/proto_pp am: 8 bytes, both ranks
#     pinned and spinning; the mean of its round trips) over shm (3 runs) and over
#     --driver fpga-model;
#   * benches/c/mpi_rma.c -l (8-byte latencies, put rate, lock epoch; the default rule:
#     median of 5 passes of >= 20 ms) on the message path over shm (SKIFMPI_RMA=messages)
#     and over fpga-model, each with the lock aggregation on and off
#     (SKIFMPI_RMA_AGGREGATE=0), and with the progress thread (SKIFMPI_ASYNC_PROGRESS=1),
#     and the direct path with and without the thread; each by both rules (then -s best:
#     the fastest of up to 201 passes of >= 0.5 ms, config names ending in -best).
# Output: msgpath.csv here (round,config,test,size,value,unit; proto rows are full round
# trips in us), the load average before each program on stderr.
#   cargo build --release -p skifrun -p skifmpi -p skifch-benches --example proto_pp
#   ROUNDS=3 docs/results-2026-11-29-rma/msgpath.sh     (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rel=${CARGO_TARGET_DIR:-$root/target}/release
out=${OUT:-$root/docs/results-2026-11-29-rma}
rounds=${ROUNDS:-3}
tmp=$(mktemp -d /tmp/rma-msg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
SKIFMPI_LIBDIR=$rel "$root/mpi-lite/bin/skif-mpicc" -O2 benches/c/mpi_rma.c -o "$tmp/lite"
f=$out/msgpath.csv
echo "round,config,test,size,value,unit" >"$f"
log() { echo "$(date -u +%H:%M:%S) $* load $(cut -d' ' -f1-3 /proc/loadavg)" >&2; }
proto() { # proto ROUND CONFIG N [skifrun args]: one round trip figure
    local r=$1 cfg=$2 n=$3
    shift 3
    log "$cfg"
    local half
    half=$(timeout 600 "$rel/skifrun" -n 2 "$@" "$rel/examples/proto_pp" am "$n" | sed -n 's/.*half-rtt \([0-9.]*\) us.*/\1/p')
    if [ -n "$half" ]; then echo "$r,$cfg,proto_rtt,8,$(echo "$half * 2" | bc -l),us" >>"$f"; else echo "$cfg: no figure" >&2; fi
}
rma() { # rma ROUND CONFIG [VAR=VALUE...] -- [skifrun args] -- [mpi_rma args]
    local r=$1 cfg=$2
    shift 2
    local envs=() sargs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    while [ "$1" != -- ]; do sargs+=("$1"); shift; done
    shift
    log "$cfg"
    env "${envs[@]}" timeout 900 "$rel/skifrun" -n 2 "${sargs[@]}" "$tmp/lite" -i "$cfg" -l "$@" |
        sed "s/^/$r,/" >>"$f" || echo "$cfg failed" >&2
}
fpga=(--driver fpga-model)
msg=SKIFMPI_RMA=messages
for ((r = 1; r <= rounds; r++)); do
    for k in 1 2 3; do proto "$r" shm 20000; done
    proto "$r" fpga-model 2000 "${fpga[@]}"
    # median rule, then -s best (the fastest short pass: the scheduler's share filtered)
    for b in "" best; do
        s=${b:+-$b}
        a=()
        [ -n "$b" ] && a=(-s best)
        rma "$r" shm-msg$s $msg -- -- "${a[@]}"
        rma "$r" shm-msg-noagg$s $msg SKIFMPI_RMA_AGGREGATE=0 -- -- "${a[@]}"
        rma "$r" shm-msg-async$s $msg SKIFMPI_ASYNC_PROGRESS=1 -- -- "${a[@]}"
        rma "$r" fpga-model$s X=1 -- "${fpga[@]}" -- "${a[@]}"
        rma "$r" fpga-model-noagg$s SKIFMPI_RMA_AGGREGATE=0 -- "${fpga[@]}" -- "${a[@]}"
        rma "$r" fpga-model-async$s SKIFMPI_ASYNC_PROGRESS=1 -- "${fpga[@]}" -- "${a[@]}"
        rma "$r" direct$s X=1 -- -- "${a[@]}"
        rma "$r" direct-async$s SKIFMPI_ASYNC_PROGRESS=1 -- -- "${a[@]}"
    done
done
