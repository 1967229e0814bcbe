#!/bin/bash
# run.sh OUT: fi_pingpong (net) and raw msgrate latency between two namespaces, both under ldtrace.so
out=$1; mkdir -p $out
cd "$(dirname "$0")/../../.."
. scripts/netns-nodes.sh
netns_nodes skl-$$ ldt
netns_up || exit 2
export SKIFCH_OFI_DOMAIN=eth0
L=${LDTRACE:-/tmp/ldtrace.so}
in_node() { local i=$1; shift; ip netns exec "${nodes[$i]}" "$@"; }
rm -f /tmp/ldt.*
in_node 1 env LD_PRELOAD=$L taskset -c 1 fi_pingpong -p net -e rdm -I 20000 -S 8 -B 47611 >/dev/null 2>&1 &
sleep 0.5
in_node 0 env LD_PRELOAD=$L taskset -c 0 fi_pingpong -p net -e rdm -I 20000 -S 8 -P 47611 10.10.0.2 2>/dev/null | awk '$1 == 8 {print "fi_pingpong usec/xfer", $7}'
wait
mkdir -p $out/fipp; mv /tmp/ldt.* $out/fipp/
netns_hydra -env LD_PRELOAD $L ${REL:-target/release}/msgrate --tests latency --sizes 8 --csv /tmp/ldt-raw.csv >/dev/null 2>&1
echo "raw latency $(awk -F, '$2 == "latency" && $3 == 8 { print $4 }' /tmp/ldt-raw.csv)"
mkdir -p $out/raw; mv /tmp/ldt.* $out/raw/
