#!/bin/bash
# floor-tools.sh MODE ARGS: the experiments of this directory, between two network
# namespaces (scripts/netns-nodes.sh), raw channels' msgrate 8 B latency against
# libfabric's own fi_pingpong over `net`. Root only. Modes:
#   ab ROUNDS DIR...        msgrate binaries of DIRs alternated, then fi_pingpong, per round
#                           (CSV lines round,impl,us)
#   env ROUNDS VARIANT...   one msgrate ($REL or target/release) with variants alternated;
#                           VARIANT "name:ENV=V,ENV2=V2" (passed through hydra -env)
#   callgrind OUT           fi_pingpong's client under callgrind, 2000 and 4000 iterations
#                           (instructions per round trip: the difference / 2000)
#   stamps OUT              fi_pingpong and msgrate ($REL) under ldtrace.so ($LDTRACE, default
#                           /tmp/ldtrace.so, built from ldtrace/ldtrace.c); then
#                           ldtrace/ana2.py TSC_GHZ OUT/raw/ldt.* (and OUT/fipp/ldt.*)
# OUT must be an absolute path.
set -u
mode=$1; shift
cd "$(dirname "$0")/../.."
. scripts/netns-nodes.sh
netns_nodes skf-$$ floor-tools
netns_up || exit 2
export SKIFCH_OFI_DOMAIN=eth0
rel=${REL:-$PWD/target/release}
in_node() { local i=$1; shift; ip netns exec "${nodes[$i]}" "$@"; }
# fi_pingpong N [PREFIX...]: a server in node 1, the client in node 0 under PREFIX; prints
# the client's half round trip (us)
fipp() {
    local n=$1; shift
    in_node 1 taskset -c 1 ${SERVER_PREFIX:-} fi_pingpong -p net -e rdm -I "$n" -S 8 -B 47611 >/dev/null 2>&1 &
    sleep 0.5
    in_node 0 taskset -c 0 timeout 300 "$@" fi_pingpong -p net -e rdm -I "$n" -S 8 -P 47611 10.10.0.2 \
        2>/dev/null | awk '$1 == 8 { print $7 }'
    wait
}
raw() { # raw BIN [hydra args...]: msgrate's 8 B latency
    local bin=$1; shift
    netns_hydra "$@" "$bin" --tests latency --sizes 8 --csv "$tmp/raw.csv" >/dev/null 2>&1
    awk -F, '$2 == "latency" && $3 == 8 { print $4 }' "$tmp/raw.csv"
}
case $mode in
    ab)
        rounds=$1; shift
        for r in $(seq 1 "$rounds"); do
            for d in "$@"; do echo "$r,$(basename "$d"),$(raw "$d/msgrate")"; done
            echo "$r,fi_pingpong-net,$(fipp 20000 env)"
        done ;;
    env)
        rounds=$1; shift
        for r in $(seq 1 "$rounds"); do
            for v in "$@"; do
                name=${v%%:*}; envs=${v#*:}; args=()
                IFS=, read -ra kv <<<"$envs"
                for p in "${kv[@]}"; do [ -n "$p" ] && args+=(-env "${p%%=*}" "${p#*=}"); done
                echo "$r,$name,$(raw "$rel/msgrate" "${args[@]}")"
            done
        done ;;
    callgrind)
        out=$1; mkdir -p "$out"
        for n in 2000 4000; do
            fipp "$n" valgrind --tool=callgrind --callgrind-out-file="$out/fipp.$n" >/dev/null
        done
        grep -h '^summary' "$out"/fipp.2000 "$out"/fipp.4000 ;;
    stamps)
        out=$1; mkdir -p "$out/fipp" "$out/raw"
        l=${LDTRACE:-/tmp/ldtrace.so}
        rm -f /tmp/ldt.*
        echo "fi_pingpong us $(SERVER_PREFIX="env LD_PRELOAD=$l" fipp 20000 env LD_PRELOAD="$l")"
        mv /tmp/ldt.* "$out/fipp/"
        echo "raw us $(raw "$rel/msgrate" -env LD_PRELOAD "$l")"
        mv /tmp/ldt.* "$out/raw/" ;;
    *) echo "floor-tools.sh: mode ab, env, callgrind or stamps" >&2; exit 2 ;;
esac
