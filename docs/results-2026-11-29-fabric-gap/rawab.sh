#!/bin/bash
# rawab.sh ROUNDS DIR...: raw msgrate 8 B latency between two namespaces, msgrate binaries of DIRs alternated, plus fi_pingpong
cd "$(dirname "$0")/../.."
. scripts/netns-nodes.sh
netns_nodes sky-$$ rawab
netns_up || exit 2
export SKIFCH_OFI_DOMAIN=eth0
in_node() { local i=$1; shift; ip netns exec "${nodes[$i]}" "$@"; }
rounds=$1; shift
for r in $(seq 1 $rounds); do
  for d in "$@"; do
    netns_hydra $d/msgrate --tests latency --sizes 8 --csv /tmp/rawab-$$.csv >/dev/null 2>&1
    echo "$r,$(basename $d),$(awk -F, '$2 == "latency" && $3 == 8 { print $4 }' /tmp/rawab-$$.csv)"
  done
  if [ "${FIPP:-1}" = 1 ]; then
    in_node 1 taskset -c 1 fi_pingpong -p net -e rdm -I 20000 -S 8 -B 47611 >/dev/null 2>&1 &
    sleep 0.5
    echo "$r,fi_pp,$(in_node 0 taskset -c 0 timeout 120 fi_pingpong -p net -e rdm -I 20000 -S 8 -P 47611 10.10.0.2 2>/dev/null | awk '$1 == 8 { print $7 }')"
    wait
  fi
done
