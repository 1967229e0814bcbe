#!/bin/bash
# Alternates two libgasnet.so builds over gasnet_bench (built by scripts/gasnet-bench.sh):
#   REL=target/release BENCH=OUT/gasnet_bench NEW=DIR OLD=DIR rateloop.sh LOOPS OUTFILE
# Each loop runs both libraries once (the order reversed every loop), through
# LD_LIBRARY_PATH (gasnet_bench's RUNPATH comes after it); one CSV line per figure:
# lib,test,size,value,unit,loop,load.
set -u
for i in $(seq 1 "$1"); do
  if [ $((i % 2)) = 1 ]; then order="new old"; else order="old new"; fi
  for v in $order; do
    dir=$NEW; [ "$v" = old ] && dir=$OLD
    LD_LIBRARY_PATH=$dir "$REL/skifrun" -n 2 -- "$BENCH" -i "$v" -t 0.5 -r 3 2>/dev/null |
      grep -E "^$v,(msgrate|msgrate_stream|latency),8," | sed "s/$/,$i,$(cut -d' ' -f1 /proc/loadavg)/"
  done
done >"$2"
