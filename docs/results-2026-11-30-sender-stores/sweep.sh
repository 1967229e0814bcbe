#!/bin/bash
# sweep.sh REPS OUT.csv: ring_floor's windowed rate (W 64, 16-byte payloads: the 24-byte
# record of an 8-byte AM Medium) against the sender's extra instructions per message, with
# a stack store every 10 instructions (ring_floor, K iterations of 10) and with none
# (ring_floor_nostore, K iterations of 7: the same instruction counts), alternated. Each
# round starts when $GATE returns (a command that waits for a near vCPU placement).
#   cc -O2 ring_floor.c -o /tmp/ring_floor; cc -O2 -DSTORE=0 ring_floor.c -o /tmp/ring_floor_nostore
reps=$1; out=$2
echo "rep,build,extra_instr,Mmsgs" > "$out"
for r in $(seq 1 "$reps"); do
    ${GATE:-true}
    for i in 0 50 100 150 200 250; do
        for b in ring_floor ring_floor_nostore; do
            per=10; [ $b = ring_floor_nostore ] && per=7
            K=$(( (i + per / 2) / per ))
            echo "$r,$b,$i,$(/tmp/$b 64 16 4000 11 $K 0 | awk '{print $9}')" >> "$out"
        done
    done
done
