#!/bin/bash
# cgfloor.sh OUT: callgrind instructions per round trip of fi_pingpong (net) client and raw msgrate rank 0, N and 2N
out=$1; mkdir -p $out
cd "$(dirname "$0")/../.."
. scripts/netns-nodes.sh
netns_nodes skz-$$ cgfloor
netns_up || exit 2
export SKIFCH_OFI_DOMAIN=eth0
in_node() { local i=$1; shift; ip netns exec "${nodes[$i]}" "$@"; }
for n in 2000 4000; do
  in_node 1 taskset -c 1 fi_pingpong -p net -e rdm -I $n -S 8 -B 47611 >/dev/null 2>&1 &
  sleep 0.5
  in_node 0 taskset -c 0 valgrind --tool=callgrind --callgrind-out-file=$out/fipp.$n fi_pingpong -p net -e rdm -I $n -S 8 -P 47611 10.10.0.2 > $out/fipp.$n.log 2>&1
  wait
done
