#!/bin/bash
# rawlat.sh ROUNDS VARIANT...: raw msgrate 8 B latency between two namespaces, variants alternated
# VARIANT: "name:ENV=V,ENV2=V2" (env passed through hydra -env)
cd "$(dirname "$0")/../.."
. scripts/netns-nodes.sh
netns_nodes skx-$$ rawlat
netns_up || exit 2
export SKIFCH_OFI_DOMAIN=eth0
rel=${REL:-$PWD/target/release}
rounds=$1; shift
for r in $(seq 1 $rounds); do
  for v in "$@"; do
    name=${v%%:*}; envs=${v#*:}; args=()
    IFS=, read -ra kv <<<"$envs"
    for p in "${kv[@]}"; do [ -n "$p" ] && args+=(-env "${p%%=*}" "${p#*=}"); done
    netns_hydra "${args[@]}" ${PREFIX:-} $rel/msgrate --tests latency --sizes 8 --csv /tmp/rawlat-$$.csv >/dev/null 2>&1
    echo "$r,$name,$(awk -F, '$2 == "latency" && $3 == 8 { print $4 }' /tmp/rawlat-$$.csv)"
  done
done
