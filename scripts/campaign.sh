#!/bin/bash
# campaign.sh: a small fault campaign (issue 16's closing checks). Each round starts a
# 4- or 6-rank job under skifrun (mpi-lite barrier or allreduce loop, skifshmem put loop),
# SIGKILLs a random rank after 0.3-0.9 s, and checks that the job ends within 10 s with a
# failure status and that no process of the job is left.
#
#   cargo build --release -p skifrun -p skifmpi -p shmem
#   scripts/campaign.sh [ROUNDS]          # default 30; prints one line per round and a summary
#
# Environment: CARGO_TARGET_DIR (where the release build is), as the wrappers use it.
# Exit status: 0 if no round hung, left a process or ended with status 0 after a kill.
set -u
cd "$(dirname "$0")/.."
rounds=${1:-30}
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
sk=$rel/skifrun
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SKIFMPI_LIBDIR=$rel mpi-lite/bin/skif-mpicc -O2 benches/c/mpi_loop.c -o "$tmp/mpi_loop" || exit 1
SKIFSHMEM_LIBDIR=$rel shmem/bin/skif-oshcc -O2 benches/c/shmem_putloop.c -o "$tmp/putloop" || exit 1
hang=0 bad=0 left=0 nokill=0
for i in $(seq 1 "$rounds"); do
  case $((i % 3)) in
    0) n=6; cmd=("$tmp/mpi_loop" 1000000000 barrier) ;;
    1) n=4; cmd=("$tmp/mpi_loop" 1000000000 allreduce) ;;
    2) n=4; cmd=("$tmp/putloop" 1000000000) ;;
  esac
  "$sk" -n $n -- "${cmd[@]}" >/dev/null 2>"$tmp/err" & sp=$!
  sleep 0.$((RANDOM % 7 + 3))
  pids=$(pgrep -P $sp)
  victim=$(echo "$pids" | shuf -n1)
  if [ -n "$victim" ]; then kill -9 "$victim"; else nokill=$((nokill + 1)); fi
  t0=$(date +%s%N)
  for _ in $(seq 1 100); do kill -0 $sp 2>/dev/null || break; sleep 0.1; done
  if kill -0 $sp 2>/dev/null; then hang=$((hang + 1)); kill -9 $sp; echo "round $i: HANG"; fi
  wait $sp; rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ -n "$victim" ] && [ $rc -eq 0 ] && { bad=$((bad + 1)); echo "round $i: status 0 after a kill"; }
  sleep 0.2
  for p in $pids; do kill -0 "$p" 2>/dev/null && { left=$((left + 1)); echo "round $i: pid $p left"; }; done
  echo "round $i: $n ranks, ${cmd[*]##*/}, killed ${victim:-none}, status $rc, ended ${ms} ms later"
done
echo "rounds $rounds: hangs $hang, status 0 after a kill $bad, processes left $left, no victim (job done) $nokill"
[ $hang -eq 0 ] && [ $bad -eq 0 ] && [ $left -eq 0 ]
