#!/bin/bash
# near.sh [THR_US] [MAXWAIT_S]: waits until the 8-byte channel ping-pong is below THR_US (default 0.1)
thr=${1:-0.1}; max=${2:-300}; t0=$(date +%s)
while :; do
  v=$(${REL:-target/release}/msgrate --tests latency --sizes 8 --target-s 0.05 --reps 3 --csv /tmp/near.csv --svg /tmp/near.svg >/dev/null 2>&1; grep latency /tmp/near.csv | cut -d, -f4)
  awk -v v="$v" -v t="$thr" 'BEGIN{exit !(v != "" && v+0 < t+0)}' && exit 0
  [ $(( $(date +%s) - t0 )) -ge $max ] && exit 1
  sleep 3
done
