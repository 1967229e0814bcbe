#!/bin/bash
# tcp-segments.sh: TCP segments per message (nstat in both namespaces, before and after) of
# libfabric's fi_pingpong over `net` and of raw channels' 8-byte latency test (msgrate), two
# rounds; run as root from anywhere: sudo docs/results-2026-12-01-status/tcp-segments.sh
cd "$(dirname "$0")/../.."
rel=$PWD/target/release
n=20000
. scripts/netns-nodes.sh
netns_nodes skq-$$ acks
netns_up || exit 2
in_node() { local i=$1; shift; ip netns exec "${nodes[$i]}" "$@"; }
export SKIFCH_OFI_DOMAIN=eth0
snap() { for i in 0 1; do in_node $i nstat -a -z 2>/dev/null | awk -v n=$i '{print n" "$1" "$2}'; done; }
diffs() { # label
  snap > /tmp/acks.after
  join <(sort /tmp/acks.before | awk '{print $1"_"$2" "$3}' | sort) <(sort /tmp/acks.after | awk '{print $1"_"$2" "$3}' | sort) |
   awk -v L="$1" '$3-$2>0 && ($1 ~ /OutSegs|InSegs|PureAcks|DelayedACK|Quick|HPAcks|HPHits|TCPHPAcks|TCPPureAcks|OFOQueue|RetransSegs|TCPAutoCorking|TCPOrigDataSent/) {printf "%s %s %d\n", L, $1, ($3-$2)}'
}
for r in 1 2; do
snap > /tmp/acks.before
in_node 1 taskset -c 1 fi_pingpong -p net -e rdm -I $n -S 8 -B 47611 >/dev/null 2>&1 &
sleep 0.5
in_node 0 taskset -c 0 timeout 120 fi_pingpong -p net -e rdm -I $n -S 8 -P 47611 10.10.0.2 2>/dev/null | awk '$1 == 8 { print "fi_pingpong lat " $7 }'
wait
diffs fi_pp
snap > /tmp/acks.before
netns_hydra "$rel/msgrate" --tests latency --sizes 8 --target-s 0.3 --csv /tmp/acks.raw.csv >/tmp/acks.log 2>&1
awk -F, '$2 == "latency" && $3 == 8 { print "raw lat " $4 }' /tmp/acks.raw.csv
diffs raw
done
netns_down
