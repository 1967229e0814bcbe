#!/bin/bash
# fabric-floors.sh: the transports' own 8 B ping-pong latency between two "nodes" (network
# namespaces joined by a bridge, as scripts/ofi-rates.sh makes them), beside the libraries
# built on them, alternated round by round: libfabric's `fi_pingpong` over the provider the
# ofi driver uses (`net`; and `tcp;ofi_rxm`), UCX's `ucx_perftest -t tag_lat` over TCP (what
# MPICH runs on here), raw SkifCh channels (`msgrate`) and MPICH (the peers'
# msgrate_mpi.c). The first two are floors: what is left above them is the library's own
# per-message work. Each program pinned one rank per CPU (0 and 1) except MPICH (unbound,
# as in ofi-rates.sh).
#
#   cargo build --release -p skifch-benches --bin msgrate
#   sudo ROUNDS=5 scripts/fabric-floors.sh [OUTDIR]   # root (ip netns); fi_pingpong
#                                                      # (libfabric-bin), ucx_perftest
#                                                      # (ucx-utils), mpiexec.hydra, mpicc.mpich
# Environment: ROUNDS (default 3), N (ping-pongs per floor run, default 20000),
# CARGO_TARGET_DIR (where the release build is).
# Output: OUTDIR/all.csv (impl,test,size,value,unit,round; value in us, half a round
# trip), the load average before each round in OUTDIR/load.txt, and on stdout the medians
# over the rounds and each implementation's per-round ratio to fi_pingpong over `net`.
set -u
cd "$(dirname "$0")/.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
rounds=${ROUNDS:-3}
n=${N:-20000}
out=${1:-$(mktemp -d /tmp/fabric-floors.XXXXXX)}
mkdir -p "$out"
for t in fi_pingpong ucx_perftest mpiexec.hydra mpicc.mpich; do
    command -v $t >/dev/null || { echo "fabric-floors: $t is not on PATH" >&2; exit 2; }
done
[ -x "$rel/msgrate" ] || { echo "fabric-floors: $rel/msgrate missing (build first)" >&2; exit 2; }
. scripts/netns-nodes.sh
netns_nodes skf-$$ fabric-floors
netns_up || exit 2
peers=/work/shared/peers/msgrate_mpi.c
[ -e "$peers" ] || peers=../shared/peers/msgrate_mpi.c
mpicc.mpich -O2 "$peers" -o "$tmp/mr_mpich" -lm || exit 1
in_node() { local i=$1; shift; ip netns exec "${nodes[$i]}" "$@"; }
export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 SKIFCH_OFI_DOMAIN=eth0

# fi_pingpong's table row for size 8: "8 20k =20k 312k 0.22s 1.47 5.44 0.18" (usec/xfer
# in the 7th column, half a round trip)
fi_pp() { # fi_pp PROVIDER
    in_node 1 taskset -c 1 fi_pingpong -p "$1" -e rdm -I "$n" -S 8 -B 47611 >/dev/null 2>&1 &
    sleep 0.5
    in_node 0 taskset -c 0 timeout 120 fi_pingpong -p "$1" -e rdm -I "$n" -S 8 -P 47611 10.10.0.2 \
        2>/dev/null | awk '$1 == 8 { print $7 }'
    wait
}
# ucx_perftest -f: the last line's 3rd column is the median latency (us, half a round trip)
ucx_lat() {
    in_node 1 ucx_perftest -t tag_lat -s 8 -n "$n" -w 2000 -c 1 -f >/dev/null 2>&1 &
    sleep 0.5
    in_node 0 timeout 120 ucx_perftest 10.10.0.2 -t tag_lat -s 8 -n "$n" -w 2000 -c 0 -f \
        2>/dev/null | tail -1 | awk '{ print $3 }'
    wait
}
csv=$out/all.csv
: >"$csv"
: >"$out/load.txt"
row() { [ -n "$3" ] && echo "$1,latency,8,$3,us,$2" >>"$csv"; }
for r in $(seq 1 "$rounds"); do
    echo "round $r: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt" >&2
    row fi_pingpong-net "$r" "$(fi_pp net)"
    row fi_pingpong-rxm "$r" "$(fi_pp 'tcp;ofi_rxm')"
    row ucx-tag_lat "$r" "$(ucx_lat)"
    netns_hydra "$rel/msgrate" --tests latency --sizes 8 --csv "$tmp/raw.csv" >/dev/null 2>&1
    row skifch-raw "$r" "$(awk -F, '$2 == "latency" && $3 == 8 { print $4 }' "$tmp/raw.csv" 2>/dev/null)"
    row mpich "$r" "$(netns_hydra "$tmp/mr_mpich" -i mpich -T latency -m 8 2>/dev/null |
        awk -F, '$3 == 8 { print $4 }')"
done
echo "CSV: $csv" >&2
python3 - "$csv" <<'PY'
import csv, statistics, sys
by = {}
for impl, test, size, value, unit, rnd in csv.reader(open(sys.argv[1])):
    by.setdefault(impl, {})[int(rnd)] = float(value)
base = by.get("fi_pingpong-net", {})
print("\n| 8 B latency, us | median | best | median of the per-round ratio to fi_pingpong (net) |")
print("| --- | ---: | ---: | ---: |")
for impl in ("fi_pingpong-net", "fi_pingpong-rxm", "ucx-tag_lat", "skifch-raw", "mpich"):
    v = by.get(impl)
    if not v:
        print("| %s | - | - | - |" % impl)
        continue
    ratios = [v[r] / base[r] for r in v if r in base]
    print("| %s | %.3f | %.3f | %s |" % (impl, statistics.median(v.values()), min(v.values()),
          "%.3f" % statistics.median(ratios) if ratios else "-"))
PY
