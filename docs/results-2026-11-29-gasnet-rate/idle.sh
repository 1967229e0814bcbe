#!/bin/bash
# idle.sh [PCT] [MAXWAIT_S]: waits until the CPUs were >= PCT% idle over 0.5 s (default 90, 120 s)
pct=${1:-90}; max=${2:-120}; t0=$(date +%s)
while :; do
  read -r _ a b c d e f g h _ < /proc/stat; i1=$((d+e)); t1=$((a+b+c+d+e+f+g+h))
  sleep 0.5
  read -r _ a b c d e f g h _ < /proc/stat; i2=$((d+e)); t2=$((a+b+c+d+e+f+g+h))
  idle=$(( 100 * (i2 - i1) / (t2 - t1 + 1) ))
  [ $idle -ge $pct ] && exit 0
  [ $(( $(date +%s) - t0 )) -ge $max ] && exit 1
done
