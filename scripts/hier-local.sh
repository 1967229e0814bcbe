#!/bin/bash
# hier-local.sh: wall clock of two ranks of one node, through the hierarchy (the node's shm
# lanes inside a multi-node job, issue 21: "no regression from the hierarchy") against the
# same pair as a one-node job (the shm driver alone). 8 B message rate and latency of the
# raw channels (the `msgrate` tool) and of mpi-lite (the peers' msgrate_mpi.c), both ranks
# on node 0 of the two network namespaces of netns-nodes.sh, started by mpiexec.hydra.
# The hierarchical layout is `SKIFCH_DRIVER=hier`: the hierarchy with its fabric driver
# open on the node's eth0, as in a job of several nodes (msgrate_mpi.c takes exactly two
# ranks, so no third rank on the other node). The layouts alternate within each round,
# and which goes first alternates between rounds; per round the ratio hier / one-node
# (rate: above 1 is better; latency: one-node / hier, above 1 better too). Root only.
#
#   cargo build --release -p skifrun -p skifmpi && cargo build --release -p skifch-benches --bin msgrate
#   sudo scripts/hier-local.sh [OUTDIR]
# Environment: ROUNDS (default 5), LIB (the directory of the libskifmpi.so to measure;
# default the release build), MSGRATE (the raw tool; default the release build), PROVIDER
# (SKIFCH_OFI_PROVIDER), GATE_US (each layout's programs start when the 8-byte channel
# ping-pong is below it, e.g. 0.1: scripts/near-gate.sh; the probe goes to OUTDIR/probes.txt).
set -u
cd "$(dirname "$0")/.."
rel=${CARGO_TARGET_DIR:-$PWD/target}/release
lib=${LIB:-$rel}
msgrate=${MSGRATE:-$rel/msgrate}
rounds=${ROUNDS:-5}
out=${1:-$(mktemp -d /tmp/hier-local.XXXXXX)}
mkdir -p "$out"
for f in "$msgrate" "$lib/libskifmpi.so"; do
    [ -e "$f" ] || { echo "hier-local: $f missing (build first, see the header)" >&2; exit 2; }
done
command -v mpiexec.hydra >/dev/null || { echo "hier-local: mpiexec.hydra is not on PATH" >&2; exit 2; }
. scripts/netns-nodes.sh
netns_nodes skh-$$ hier-local
netns_up || exit 2
peers=/work/shared/peers/msgrate_mpi.c
[ -e "$peers" ] || peers=../shared/peers/msgrate_mpi.c
SKIFMPI_LIBDIR=$lib mpi-lite/bin/skif-mpicc -O2 "$peers" -o "$tmp/mr_lite" -lm || exit 1
export SKIFCH_OFI_DOMAIN=eth0
[ -n "${PROVIDER:-}" ] && export SKIFCH_OFI_PROVIDER=$PROVIDER
hosts="${nodes[0]}:2" np=2
csv=$out/all.csv
: >"$csv"
: >"$out/load.txt"
gate_dir=$tmp
. scripts/near-gate.sh
run_layout() { # run_layout LAYOUT ROUND
    local env=(-env LD_LIBRARY_PATH "$lib")
    [ "${GATE_US:-0}" != 0 ] && echo "round $2 $1: probe $(near_gate "$GATE_US") us" >>"$out/probes.txt"
    [ "$1" = hier ] && env+=(-env SKIFCH_DRIVER hier)
    netns_hydra "${env[@]}" "$msgrate" --tests msgrate,latency --sizes 8 --csv "$tmp/raw.csv" \
        >"$tmp/raw.log" 2>&1 || { echo "raw ($1) failed:" >&2; tail -5 "$tmp/raw.log" >&2; }
    grep -v '^#\|^impl' "$tmp/raw.csv" 2>/dev/null | cut -d, -f2-5 | sed "s/^/$1,raw,/; s/\$/,$2/" >>"$csv"
    netns_hydra "${env[@]}" "$tmp/mr_lite" -i mpi-lite -T msgrate,latency -m 8 2>"$tmp/lite.err" |
        grep -v '^impl' | cut -d, -f2-5 | sed "s/^/$1,mpi-lite,/; s/\$/,$2/" >>"$csv" ||
        { echo "mpi-lite ($1) failed:" >&2; tail -5 "$tmp/lite.err" >&2; }
}
for r in $(seq 1 "$rounds"); do
    echo "round $r: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt" >&2
    if [ $((r % 2)) = 1 ]; then order="one-node hier"; else order="hier one-node"; fi
    for layout in $order; do run_layout "$layout" "$r"; done
done
echo "CSV: $csv" >&2
python3 - "$csv" "$out/load.txt" <<'PY'
import csv, statistics, sys
v = {}
for layout, impl, test, size, value, unit, rnd in csv.reader(open(sys.argv[1])):
    if int(size) == 8:
        v[(impl, test, int(rnd), layout)] = (float(value), unit)
load = [l.split(":")[1].split()[0] for l in open(sys.argv[2])]
for impl in ("raw", "mpi-lite"):
    for test in ("msgrate", "latency"):
        rnds = sorted({k[2] for k in v if k[:2] == (impl, test)})
        print(f"\n{impl} {test} (8 B): round, load, one-node, hier, ratio")
        ratios = []
        for r in rnds:
            a, b = v.get((impl, test, r, "one-node")), v.get((impl, test, r, "hier"))
            if not a or not b:
                print(f"  {r}  {load[r - 1]}  {a and a[0]}  {b and b[0]}  -")
                continue
            ratio = b[0] / a[0] if test == "msgrate" else a[0] / b[0]
            ratios.append(ratio)
            print(f"  {r}  {load[r - 1]}  {a[0]:.4g} {a[1]}  {b[0]:.4g} {b[1]}  {ratio:.3f}")
        if ratios:
            print(f"  median ratio {statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})")
PY
