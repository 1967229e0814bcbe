#!/usr/bin/env bash
# gasnet-bench.sh: gasnet-shim against UCX active messages in one run (issue 20, "Speed"):
# benches/c/gasnet_bench.c built with gasnet-shim's skifch-seq.mak fragment (impl
# gasnet-shim, skifrun -n 2 over shm), beside -- in the same run, ROUNDS rounds, the order
# reversed every other round (the peers README's "Noise") -- UCX's ucp_am_lat/ucp_am_bw
# (../shared/peers/run.sh, group ucx: impl ucx-am), the raw SkifCh channel ping-pong (the
# msgrate tool's latency test, impl skifch-shm) and skifshmem's direct-path get latency
# (benches/c/shmem_lat.c via skif-oshcc, impl skifshmem), and UCX's AM API under
# gasnet_bench's own protocols (benches/c/ucx_am_bench.c, impl ucx-am-lean: the same
# window-and-ack as our `msgrate`, which ucp_am_bw never pays, and a lean client: no
# perftest bookkeeping; needs libucx-dev, else skipped with a note). Output on stdout: the
# medians over the rounds and the ratios the issue asks about (against ucp_am_bw, as the
# issue names it) and the like-for-like ones; per round CSVs and logs in $OUT.
#
#   scripts/gasnet-bench.sh                      # build (release), 3 rounds: a few minutes
#
# Environment (defaults in brackets): ROUNDS [3]  TARGET_S [0.3]  REPS [5]
#   OUT [$CARGO_TARGET_DIR/release/gasnet-bench]  NO_BUILD=1 (use what is built)
#   PEERS [../shared/peers]  (run.sh installs ucx-utils with apt when root)
#   WAIT_NEAR_US [0]  run.sh's c2c gate for the UCX tests (0: off; a loaded machine never
#                     passes it and each test then waits GATE_WAIT_S)
#   GATE_US [0]       before each program of a round, wait (at most GATE_MAX_S [60]) until
#                     the 8-byte channel ping-pong (the msgrate tool's probe) is below
#                     GATE_US, e.g. 0.1: the vCPUs' placement moves every figure 2-4x
#                     (../shared/peers/README.md, "Noise"); 0: off. The probe's last
#                     value is in the round's log line.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
rel=$target/release
out=${OUT:-$rel/gasnet-bench}
rounds=${ROUNDS:-3}
peers=$(cd "${PEERS:-$root/../shared/peers}" && pwd)
ts=${TARGET_S:-0.3}
reps=${REPS:-5}
note() { echo "# $*" >&2; }
mkdir -p "$out"
if [ -z "${NO_BUILD:-}" ]; then
    # two calls: --bin would keep the libraries' cdylibs from being built
    cargo build --release --quiet -p gasnet-shim -p shmem -p skifrun
    cargo build --release --quiet -p skifch-benches --bin msgrate
fi
gasnet-shim/scripts/fragments.sh "$rel" "$out/fragments"
# shellcheck disable=SC1090
mak=$out/fragments/skifch-conduit/skifch-seq.mak
cat >"$out/Makefile" <<EOF
include $mak
\$(OUT): $root/benches/c/gasnet_bench.c
	\$(GASNET_CC) \$(GASNET_CPPFLAGS) \$(GASNET_CFLAGS) -O2 \$< -o \$@ \$(GASNET_LDFLAGS) \$(GASNET_LIBS)
EOF
make -s -B -f "$out/Makefile" OUT="$out/gasnet_bench"
lean_ok=1
cc -O2 benches/c/ucx_am_bench.c -o "$out/ucx_am_bench" -lucp -lucs >"$out/build-ucx.log" 2>&1 ||
    { lean_ok=0; note "benches/c/ucx_am_bench.c not built (libucx-dev missing? see $out/build-ucx.log): no ucx-am-lean"; }
shmem_ok=1
SKIFSHMEM_LIBDIR="$rel" shmem/bin/skif-oshcc -O2 benches/c/shmem_lat.c -o "$out/shmem_lat" \
    >"$out/build-shmem.log" 2>&1 || { shmem_ok=0; note "skifshmem build failed (see $out/build-shmem.log)"; }

# the near-placement gate (GATE_US)
gate_dir=$out
. scripts/near-gate.sh

run_one() { # run_one GROUP ROUND: its CSV lines appended to the round's file
    local g=$1 r=$2 f=$out/r$2-$1.csv t0=$SECONDS p=off
    [ "${GATE_US:-0}" != 0 ] && p=$(near_gate "$GATE_US")
    case $g in
        gasnet-shim)
            "$rel/skifrun" -n 2 -- "$out/gasnet_bench" -i gasnet-shim -t "$ts" -r "$reps" >"$f" 2>"$out/r$r-$g.log" ;;
        skifch-shm)
            "$rel/skifrun" -n 2 -- "$rel/msgrate" --tests latency --sizes 8 --target-s "$ts" --reps "$reps" \
                --csv "$f.full" --svg "$out/r$r-raw.svg" >"$out/r$r-$g.log" 2>&1 && grep -v '^impl' "$f.full" >"$f" ;;
        skifshmem)
            [ "$shmem_ok" = 1 ] && "$rel/skifrun" -n 2 -- "$out/shmem_lat" -i skifshmem -t "$ts" -r "$reps" -m 8 >"$f" 2>"$out/r$r-$g.log" ;;
        ucx-am-lean)
            [ "$lean_ok" = 1 ] && "$out/ucx_am_bench" -i ucx-am-lean -t "$ts" -r "$reps" >"$f" 2>"$out/r$r-$g.log" ;;
        ucx-am)
            (cd "$peers" && BUILD_DIR="$out/peers" ONLY=ucx TARGET_S="$ts" REPS="$reps" WAIT_NEAR_US="${WAIT_NEAR_US:-0}" bash run.sh) \
                2>"$out/r$r-$g.log" | grep '^ucx-am,' >"$f" ;;
    esac || { note "round $r: $g FAILED (see $out/r$r-$g.log)"; return 0; }
    grep -v '^#' "$f" >>"$out/round-$r.csv" || true
    note "round $r: $g: $(grep -vc '^#' "$f") points in $((SECONDS - t0)) s, load $(cut -d' ' -f1-3 /proc/loadavg), probe before $p us"
}

groups="gasnet-shim ucx-am ucx-am-lean skifch-shm skifshmem"
for r in $(seq 1 "$rounds"); do
    : >"$out/round-$r.csv"
    order=$groups
    [ $((r % 2)) -eq 0 ] && order=$(echo "$groups" | tr ' ' '\n' | tac | tr '\n' ' ')
    for g in $order; do run_one "$g" "$r"; done
done
cat "$out"/round-*.csv >"$out/all.csv"
# Medians over the rounds, then the issue's ratios.
awk -F, '
{ k = $1 "," $2 "," $3; v[k, ++n[k]] = $4; u[k] = $5 }
END {
    for (k in n) {
        m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        med[k] = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
        printf "%s,%s,%s\n", k, med[k], u[k]
    }
    ucxlat = med["ucx-am,latency,8"]; ucxrate = med["ucx-am,msgrate,8"]
    raw = med["skifch-shm,latency,8"]; sh = med["skifshmem,get_lat,8"]
    s = med["gasnet-shim,am_short_lat,0"]; mr = med["gasnet-shim,msgrate,8"]
    ms = med["gasnet-shim,msgrate_stream,8"]
    gl = med["gasnet-shim,get_lat,8"]; pl = med["gasnet-shim,put_lat,8"]
    lw = med["ucx-am-lean,msgrate,8"]; ls = med["ucx-am-lean,msgrate_stream,8"]
    ll = med["ucx-am-lean,latency,8"]; ml = med["gasnet-shim,latency,8"]
    print "# ratios (the issue asks: <= 0.6, <= 1.3, >= 3, <= 1.5, <= 1.5)"
    if (ucxlat) printf "AM Short latency / UCX AM latency (8 B): %.2f\n", s / ucxlat
    if (raw) printf "AM Short latency / raw channel ping-pong (8 B): %.2f\n", s / raw
    if (ucxrate) printf "AM Medium 8 B rate, window 64 / UCX AM rate (8 B): %.2f\n", mr / ucxrate
    if (ucxrate && ms) printf "AM Medium 8 B rate, streamed as ucp_am_bw / UCX AM rate (8 B): %.2f\n", ms / ucxrate
    if (lw) printf "like for like: AM Medium 8 B rate, window 64 / UCX AM API, window 64 (ucx_am_bench.c): %.2f\n", mr / lw
    if (ls && ms) printf "like for like: AM Medium 8 B rate, streamed / UCX AM API, streamed (ucx_am_bench.c): %.2f\n", ms / ls
    if (ll && ml) printf "like for like: AM Medium 8 B round trip / UCX AM API 8 B round trip (ucx_am_bench.c): %.2f\n", ml / ll
    if (ll) printf "like for like: AM Short latency / UCX AM API 8 B latency (ucx_am_bench.c): %.2f\n", s / ll
    if (sh) printf "get 8 B latency / skifshmem direct get 8 B: %.2f\n", gl / sh
    if (sh) printf "put 8 B latency (blocking) / skifshmem direct get 8 B: %.2f\n", pl / sh
}' "$out/all.csv" | sort
# The ratios per round too: a round's programs ran minutes apart, each in one vCPU
# placement (../shared/peers/README.md, "Noise"), so the medians above can pair a near
# figure with a far one; a round whose figures are all near (or all far) reads the code.
for r in $(seq 1 "$rounds"); do
    awk -F, -v r="$r" '
    { v[$1 "," $2 "," $3] = $4 }
    END {
        s = v["gasnet-shim,am_short_lat,0"]; u = v["ucx-am,latency,8"]; w = v["skifch-shm,latency,8"]
        printf "# round %s: AM Short %s us, UCX %s us, raw %s us", r, s, u, w
        if (s && u) printf "; / UCX %.2f", s / u
        if (s && w) printf "; / raw %.2f", s / w
        mr = v["gasnet-shim,msgrate,8"]; lw = v["ucx-am-lean,msgrate,8"]
        ms = v["gasnet-shim,msgrate_stream,8"]; ls = v["ucx-am-lean,msgrate_stream,8"]
        if (mr && lw) printf "; Medium rate / UCX AM API: window %.2f", mr / lw
        if (ms && ls) printf ", streamed %.2f", ms / ls
        printf "\n"
    }' "$out/round-$r.csv"
done
