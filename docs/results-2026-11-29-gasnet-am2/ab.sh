#!/usr/bin/env bash
# ab.sh OUT: gasnet_bench -t 0.1 -r 15 -s best, old (main b13ac22) and new alternating, 6 rounds
out=$1
echo "# A/B: gasnet_bench -t 0.1 -r 15 -s best (best of 15 passes), old = b13ac22 (main before this work), new = $(cd /work/wt-fwd && git rev-parse --short HEAD), alternating, 2 ranks over shm" > $out
echo "# round version am_short_lat(us) latency(Medium 8 B, us) msgrate(M/s) load-average" >> $out
for r in 1 2 3 4 5 6; do
  for v in old new; do
    L=/tmp/fwd/lib-base; [ $v = new ] && L=/tmp/fwd/lib-new
    res=$(LD_LIBRARY_PATH=$L timeout 120 /work/wt-fwd/target/release/skifrun -n 2 -- /tmp/fwd/gasnet_bench -t 0.1 -r 15 -s best 2>/dev/null | awk -F, '$2=="am_short_lat"{a=$4} $2=="latency"{b=$4} $2=="msgrate"{c=$4/1e6} END{printf "am_short_lat,%s latency,%s msgrate,%.1f", a, b, c}')
    echo "$r $v $res  load $(cut -d' ' -f1 /proc/loadavg)" >> $out
  done
done
